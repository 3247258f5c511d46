// Messages to oneself, for endpoint<Card> (an addition of the emulation:
// the paper's protocol runs between processes). A request to my own
// process runs its handler at once, inside the call, with no packet,
// instance or sequence number, after the checks a request from a peer gets
// (the handler exists; a store or get lies inside my segment); its reply
// runs the reply handler inside the reply call, under the same rules (a
// request handler replies at most once).
#pragma once

#include <string>

#include "am/endpoint.hpp"

namespace hpam::am {

template <class Card>
status endpoint<Card>::self_request(msg_kind kind, unsigned handler, const uint64_t (&w)[4],
                                    const void* data, size_t len) {
  const handler_entry& e = handlers_[handler];
  if (kind == msg_kind::short4 ? !e.short4 : !e.bulk) return status::invalid_argument;
  if ((kind == msg_kind::store && !in_segment(w[bulk_word::target], len)) ||
      (kind == msg_kind::get && !in_segment(w[bulk_word::target], w[bulk_word::length]))) {
    counters_[my_proc_].segment_rejections++;
    last_error_ = "hpam: a store or get of process " + std::to_string(my_proc_) +
                  " to itself lies outside its segment (hpam_set_segment)";
    return status::rejected;
  }
  hpam_token t{this, owner_, my_proc_, 0, 0, true, false};
  state_ = handler_state::request;
  current_token_ = &t;
  if (kind == msg_kind::get) {
    const auto* src = reinterpret_cast<const void*>(w[bulk_word::target]);
    const uint64_t rw[4] = {w[bulk_word::local], w[bulk_word::arg], len, 0};
    (void)self_reply(t, msg_kind::store, handler, rw, src, w[bulk_word::length]);
  } else {
    dispatch(t, kind, handler, w, static_cast<const std::byte*>(data), len);
  }
  state_ = handler_state::none;
  current_token_ = nullptr;
  counters_[my_proc_].requests_received++;
  return status::ok;
}

template <class Card>
status endpoint<Card>::self_reply(hpam_token& t, msg_kind kind, unsigned handler,
                                  const uint64_t (&w)[4], const void* data, size_t len) {
  if (t.replied) return rule_broken("a request handler may reply only once");
  const handler_entry& e = handlers_[handler % max_handlers];
  if (handler >= max_handlers || (kind == msg_kind::short4 ? !e.short4 : !e.bulk))
    return status::invalid_argument;
  t.replied = true;
  uint64_t rw[4] = {w[0], w[1], w[2], w[3]};
  if (kind == msg_kind::store) rw[bulk_word::length] = len;
  hpam_token rt{this, owner_, my_proc_, 0, 0, false, false};
  state_ = handler_state::reply;
  current_token_ = &rt;
  dispatch(rt, kind, handler, rw, static_cast<const std::byte*>(data), len);
  state_ = handler_state::request;
  current_token_ = &t;
  return status::ok;
}

}  // namespace hpam::am
