// The receive side of endpoint<Card> (HPAM appendix B, HPAM_poll), the
// timeout walk, messages to oneself, and draining at finalize.
#pragma once

#include <cstring>

#include "am/endpoint.hpp"

namespace hpam::am {

template <class Card>
status endpoint<Card>::poll(int* handled) {
  if (state_ != handler_state::none) return rule_broken("poll called from a handler");
  if (!pending_acks_.empty()) flush_acks();
  card_.service();
  nic::rx_packet p;
  uint32_t n = 0;
  while (n < receive_budget_ && card_.receive(p)) {
    handle_packet(p);
    card_.release(p);
    ++n;
  }
  if (nprocs_ > 1) check_timeouts();
  if (handled) *handled = static_cast<int>(n);
  if (__builtin_expect(newly_unreachable_, 0)) {
    newly_unreachable_ = false;
    return status::peer_unreachable;
  }
  return status::ok;
}

// Acceptance checks, in the paper's order: CRC, header sanity, key, type.
template <class Card>
bool endpoint<Card>::accept(const nic::rx_packet& p, int& src, const am_header*& h,
                            control_word& c) {
  protocol_counters& unattributed = counters_[my_proc_];
  if (!p.crc_ok) {
    unattributed.crc_failures++;
    return false;
  }
  const nic::wire_header* w = wire_of(p.data);
  if (p.length < min_packet_size || w->length != p.length || w->src >= nprocs_ ||
      w->src == my_proc_ || w->dst != my_proc_) {
    unattributed.malformed++;
    return false;
  }
  src = w->src;
  h = header_of(p.data);
  if (key_check_ && h->key != key_) {
    counters_[src].key_rejections++;
    return false;
  }
  c = decode_control(h->control);
  if (c.instance >= depth_ || static_cast<uint32_t>(c.kind) >= msg_kind_count ||
      h->handler >= max_handlers || p.length < header_bytes(c.kind)) {
    counters_[src].malformed++;
    return false;
  }
  if (__builtin_expect(!connected_[src], 0)) connect_on_arrival(src);
  return connected_[src] != 0;
}

template <class Card>
void endpoint<Card>::handle_packet(const nic::rx_packet& p) {
  int src;
  const am_header* h;
  control_word c;
  if (!accept(p, src, h, c)) return;
  const uint32_t hdr = header_bytes(c.kind);
  const std::byte* payload = p.data + hdr;
  const uint32_t payload_len = p.length - hdr;
  if (c.cls == msg_class::request)
    on_request(src, c, *h, payload, payload_len);
  else
    on_reply(src, c, *h, payload, payload_len);
}

template <class Card>
bool endpoint<Card>::payload_ok(msg_kind kind, const am_header& h, uint32_t payload_len,
                                bool is_request) const {
  const handler_entry& e = handlers_[h.handler];
  switch (kind) {
    case msg_kind::short4: return payload_len == 0 && e.short4;
    case msg_kind::store: return h.word[bulk_word::length] == payload_len && e.bulk;
    case msg_kind::medium: return is_request && e.bulk;  // its length is the packet's
    case msg_kind::get:
      return is_request && payload_len == 0 && h.word[bulk_word::length] <= max_bulk();
    case msg_kind::ack: return !is_request && payload_len == 0;
  }
  return false;
}

// A new request runs its handler; a duplicate (the previous sequence number
// on this instance) is answered from the stored reply and never runs the
// handler again (HPAM 5.2.1).
template <class Card>
void endpoint<Card>::on_request(int src, const control_word& c, const am_header& h,
                                const std::byte* payload, uint32_t payload_len) {
  reply_desc& r = replies_.at(src, c.instance);
  if (c.sequence != r.expected) {
    if (c.sequence == static_cast<uint16_t>(r.expected - 1) && r.length != 0) {
      card_.launch(src, r.block, r.length);  // reflect the stored reply
      counters_[src].duplicates_reflected++;
    } else {
      counters_[src].malformed++;
    }
    return;
  }
  r.expected = static_cast<uint16_t>(c.sequence + 1);
  hpam_token t{this, owner_, src, c.instance, static_cast<uint16_t>(c.sequence), true, false};
  if (!run_request_handler(t, c, h, payload, payload_len)) counters_[src].malformed++;
  if (!t.replied) send_ack(src, c.instance, t.sequence);
  counters_[src].requests_received++;
}

template <class Card>
bool endpoint<Card>::run_request_handler(hpam_token& t, const control_word& c, const am_header& h,
                                         const std::byte* payload, uint32_t payload_len) {
  if (!payload_ok(c.kind, h, payload_len, true)) return false;
  state_ = handler_state::request;
  current_token_ = &t;
  if (c.kind == msg_kind::get)
    serve_get(t, h);
  else
    dispatch(t, c.kind, h.handler, h.word, payload, payload_len);
  state_ = handler_state::none;
  current_token_ = nullptr;
  return true;
}

// A get is served by the layer: the reply stores the bytes at the
// requester's address and runs the requester's handler there.
template <class Card>
void endpoint<Card>::serve_get(hpam_token& t, const am_header& h) {
  const auto* src = reinterpret_cast<const void*>(h.word[bulk_word::target]);
  (void)reply_store(t, h.handler, src, h.word[bulk_word::length], h.word[bulk_word::local],
                    h.word[bulk_word::arg]);
}

template <class Card>
void endpoint<Card>::send_ack(int src, uint32_t instance, uint16_t sequence) {
  reply_desc& r = replies_.at(src, instance);
  std::byte* pkt = card_.tx_block(r.block);
  am_header* h = header_of(pkt);
  h->key = key_;
  h->control = encode_control({msg_class::reply, msg_kind::ack, instance, sequence});
  h->handler = 0;
  h->reserved = 0;
  r.length = header_bytes(msg_kind::ack);  // stored: a duplicate request is answered with it
  counters_[src].acks_sent++;
  if (!defer_acks_) {
    card_.launch(src, r.block, r.length);
    return;
  }
  if (!r.ack_pending) {
    r.ack_pending = true;
    pending_acks_.push_back(static_cast<uint32_t>(src) * depth_ + instance);  // capacity P*D
  }
}

// Deferred acknowledgements go out after the next packet launched by a
// send, or at the start of the next poll, whichever comes first.
template <class Card>
void endpoint<Card>::flush_acks() {
  for (uint32_t idx : pending_acks_) {
    const int peer = static_cast<int>(idx / depth_);
    reply_desc& r = replies_.at(peer, idx % depth_);
    r.ack_pending = false;
    card_.launch(peer, r.block, r.length);
  }
  pending_acks_.clear();
}

// A reply matches when its instance is busy and its sequence is the one
// sent; anything else is stale (a duplicate or a reply to a resent request
// already answered) and dropped.
template <class Card>
void endpoint<Card>::on_reply(int src, const control_word& c, const am_header& h,
                              const std::byte* payload, uint32_t payload_len) {
  request_desc& d = requests_.at(src, c.instance);
  if (!d.busy || c.sequence != d.sequence) {
    counters_[src].stale_replies++;
    return;
  }
  if (!payload_ok(c.kind, h, payload_len, false)) {
    counters_[src].malformed++;  // still frees the instance: the request was answered
  } else if (c.kind != msg_kind::ack) {
    hpam_token t{this, owner_, src, c.instance, static_cast<uint16_t>(c.sequence), false, false};
    state_ = handler_state::reply;
    current_token_ = &t;
    dispatch(t, c.kind, h.handler, h.word, payload, payload_len);
    state_ = handler_state::none;
    current_token_ = nullptr;
  }
  d.busy = false;
  instance_hint_[src] = c.instance;  // hpam_free[src] = buf
  counters_[src].replies_received++;
}

template <class Card>
void endpoint<Card>::dispatch(hpam_token& t, msg_kind kind, unsigned handler,
                              const uint64_t (&w)[4], const std::byte* payload, size_t len) {
  const handler_entry& e = handlers_[handler];
  switch (kind) {
    case msg_kind::short4: e.short4(&t, e.ctx, w[0], w[1], w[2], w[3]); break;
    case msg_kind::store: {
      void* target = reinterpret_cast<void*>(w[bulk_word::target]);
      if (len) std::memcpy(target, payload, len);
      e.bulk(&t, e.ctx, target, len, w[bulk_word::arg]);
      break;
    }
    case msg_kind::medium:
      e.bulk(&t, e.ctx, const_cast<std::byte*>(payload), len, w[medium_word::arg]);
      break;
    default: break;
  }
}

// The timeout walk: K request descriptors per poll, circular over
// [peer][instance], skipping myself (HPAM_poll's hpam_check_proc/_buf).
template <class Card>
void endpoint<Card>::check_timeouts() {
  for (uint32_t k = 0; k < checks_per_poll_; ++k) {
    if (++timeout_instance_ == depth_) {
      timeout_instance_ = 0;
      if (++timeout_peer_ == nprocs_) timeout_peer_ = 0;
      if (timeout_peer_ == my_proc_ && ++timeout_peer_ == nprocs_) timeout_peer_ = 0;
    }
    request_desc& d = requests_.at(timeout_peer_, timeout_instance_);
    if (!d.busy) continue;
    const uint64_t now = clock_.now_ns();
    if (now - d.timestamp >= d.timeout) on_timeout(timeout_peer_, d, now);
  }
}

template <class Card>
void endpoint<Card>::on_timeout(int peer, request_desc& d, uint64_t now) {
  counters_[peer].timeouts++;
  if (now - d.first_sent >= give_up_ns_) {
    give_up(peer, now - d.first_sent);
    return;
  }
  card_.launch(peer, d.block, d.length);
  d.timestamp = now;
  if (d.retries < backoff_limit_) d.timeout *= 2;  // exponential backoff
  if (d.retries < 255) d.retries++;
  counters_[peer].retransmissions++;
}

template <class Card>
void endpoint<Card>::give_up(int peer, uint64_t silent_ns) {
  lost_[peer] = 1;
  for (uint32_t i = 0; i < depth_; ++i) requests_.at(peer, i).busy = false;
  if (unreachable_peer_ < 0) unreachable_peer_ = peer;
  newly_unreachable_ = true;
  last_error_ = "hpam: process " + std::to_string(peer) + " of job " + job_ +
                " is unreachable: no reply for " + std::to_string(silent_ns / 1'000'000) +
                " ms (give-up time " + std::to_string(give_up_ns_ / 1'000'000) +
                " ms); it has probably died";
}

template <class Card>
void endpoint<Card>::connect_on_arrival(int src) {
  try {
    connect(src);
  } catch (const std::exception& e) {
    last_error_ = e.what();
    counters_[src].malformed++;
  }
}

template <class Card>
status endpoint<Card>::self_request(msg_kind kind, unsigned handler, const uint64_t (&w)[4],
                                    const void* data, size_t len) {
  const handler_entry& e = handlers_[handler];
  if (kind == msg_kind::short4 ? !e.short4 : !e.bulk) return status::invalid_argument;
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

// Finalize: first every request of mine answered, then announce it and keep
// serving until each connected peer has announced the same (so a reply it
// still needs is never lost with me), or is dead or given up on.
template <class Card>
status endpoint<Card>::drain() {
  if (state_ != handler_state::none) return rule_broken("drain called from a handler");
  auto mine_outstanding = [this] {
    for (int p = 0; p < nprocs_; ++p)
      if (p != my_proc_ && !lost_[p] && request_outstanding(p)) return true;
    return false;
  };
  while (mine_outstanding()) (void)poll();
  card_.announce_done();
  const uint64_t deadline = sys::clock::monotonic_ns() + give_up_ns_;
  auto peers_finished = [this] {
    for (int p = 0; p < nprocs_; ++p)
      if (p != my_proc_ && connected_[p] && !lost_[p] && !card_.peer_done(p) && card_.peer_alive(p))
        return false;
    return true;
  };
  while (!peers_finished()) {
    (void)poll();
    if (sys::clock::monotonic_ns() > deadline) {
      last_error_ = "hpam: finalize gave up waiting for peers to finish";
      return status::peer_unreachable;
    }
  }
  return unreachable_peer_ >= 0 ? status::peer_unreachable : status::ok;
}

template <class Card>
bool endpoint<Card>::request_outstanding(int peer) const {
  for (uint32_t i = 0; i < depth_; ++i)
    if (requests_.at(peer, i).busy) return true;
  return false;
}

template <class Card>
protocol_counters endpoint<Card>::totals() const {
  protocol_counters sum;
  for (const auto& c : counters_) sum += c;
  return sum;
}

}  // namespace hpam::am
