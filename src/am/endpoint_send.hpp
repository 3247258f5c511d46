// The send side of endpoint<Card> (HPAM appendix A, HPAM_4): the
// request-reply rules checked before a send (4), the request instance
// taken through the hint pointer with a linear search on a miss (5.2.2),
// the stall that serves the network while all D are busy (5.2.3), the
// request built in its instance's own VRAM block and launched (5.2.1 step
// 1), and the reply written over the previous one in the reply block
// reserved for its requester (5.2.1 step 2.e).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "am/endpoint.hpp"
#include "sys/short_copy.hpp"

namespace hpam::am {

template <class Card>
status endpoint<Card>::rule_broken(const char* what) {
  counters_[my_proc_].rule_violations++;
  last_error_ = std::string("hpam: request-reply rule broken: ") + what;
  return status::rule_violation;
}

template <class Card>
status endpoint<Card>::check_send_slow(int dest, unsigned handler) {
  if (state_ == handler_state::request) return rule_broken("a request handler may only reply");
  if (state_ == handler_state::reply) return rule_broken("a reply handler may not send");
  if (dest < 0 || dest >= nprocs_ || handler >= max_handlers) return status::invalid_argument;
  if (lost_[dest]) return status::peer_unreachable;
  if (!connected_[dest]) {
    try {
      connect(dest);
    } catch (const std::exception& e) {
      last_error_ = e.what();
      return status::peer_unreachable;
    }
  }
  return status::ok;
}

// The hint pointer names the instance the last reply freed (or the next in
// sequence); on a miss, search the column linearly (HPAM appendix A).
// Ordered: the hint is the next instance in turn and there is no search, so
// a request goes out only once the one sent D requests before it has been
// answered.
template <class Card>
bool endpoint<Card>::search_instance(int dest, uint32_t& instance) {
  if (ordered_) return false;
  counters_[dest].hint_misses++;
  for (uint32_t i = 0; i < depth_; ++i)
    if (!requests_.at(dest, i).busy) {
      instance = i;
      return true;
    }
  return false;
}

// All D instances busy: serve the network (requests and replies) until a
// reply frees one, or the peer is given up on. What the polls find about
// other peers (one given up on, a refusal) is kept for the caller's next
// poll, never swallowed here.
template <class Card>
status endpoint<Card>::stall_for_instance(int dest, uint32_t& instance) {
  counters_[dest].stalls++;
  do {
    if (poll(nullptr, false) == status::rule_violation) return status::rule_violation;
    if (lost_[dest]) return status::peer_unreachable;
  } while (!acquire_instance(dest, instance));
  return status::ok;
}

template <class Card>
template <class Build>
status endpoint<Card>::send_request(int dest, msg_kind kind, unsigned handler, bool block,
                                    Build&& build, const expected_get& get) {
  uint32_t inst;
  if (!acquire_instance(dest, inst)) {
    if (!block) {
      counters_[dest].busy_returns++;
      return status::busy;
    }
    if (status s = stall_for_instance(dest, inst); s != status::ok) return s;
  }
  request_desc& d = requests_.at(dest, inst);
  std::byte* pkt = card_.tx_block(d.block);
  d.sequence = next_sequence(d.sequence);
  am_header* h = stamp_header(pkt, key_, {msg_class::request, kind, inst, d.sequence}, handler);
  const uint32_t hdr = header_bytes(kind);
  // The length kept in a local until the launch: the packet's bytes are
  // written through pkt, which may alias d, so d.length would be read again
  // after every store.
  uint32_t length = hdr + build(*h, pkt + hdr);
  if (acks_.may_ride()) ride_ack(dest, kind, *h, pkt, length);
  d.length = length;
  // The card need not check what it is given: d.block is the descriptor's
  // since setup, the length at most max_bulk() plus the header (and a trailer
  // only where the block has room), dest passed check_send.
  card_.launch_built(dest, d.block, pkt, length);
  d.busy = true;
  d.retries = 0;
  d.resent = false;
  d.timed_out = false;
  // The real clock is not read here (rdtsc, ~14 ns on this guest, on every
  // send): the timeout walk's first look at the busy descriptor stamps it.
  // A manual clock (the protocol tests) stamps at the send, exactly, and so
  // does a wire that can lose packets (the round trip is measured), and
  // sets d.stamped (the setting is tested, not copied into d and tested
  // there: one instruction less a send).
  d.stamped = false;
  if (__builtin_expect(stamp_at_send_, 0)) stamp_sent(dest, d);
  d.kind = kind;
  d.handler = static_cast<uint16_t>(handler);
  if (kind == msg_kind::get) {  // a constant here: other kinds never read these
    d.get_length = get.length;
    d.get_local = get.local;
    d.get_arg = get.arg;
  }
  instance_hint_[dest] = inst + 1 == depth_ ? 0 : inst + 1;
  counters_[dest].requests_sent++;
  // Behind the request, off its critical path (multi_ack: gathered for the next poll).
  acks_.after_request(ack_launcher());
  return status::ok;
}

template <class Card>
status endpoint<Card>::request_4(int dest, unsigned handler, const uint64_t (&args)[4],
                                 bool block) {
  if (status s = check_send(dest, handler); s != status::ok) return s;
  if (dest == my_proc_) return self_request(msg_kind::short4, handler, args, nullptr, 0);
  return send_request(dest, msg_kind::short4, handler, block, [&](am_header& h, std::byte*) {
    std::memcpy(h.word, args, sizeof h.word);
    return 0u;
  });
}

template <class Card>
status endpoint<Card>::request_store(int dest, unsigned handler, const void* src, size_t len,
                                     uint64_t target, uint64_t arg, bool block) {
  if (status s = check_send(dest, handler); s != status::ok) return s;
  if (len > max_bulk() || (len && !src)) return status::invalid_argument;
  const uint64_t w[4] = {target, arg, len, 0};
  if (dest == my_proc_) return self_request(msg_kind::store, handler, w, src, len);
  return send_request(dest, msg_kind::store, handler, block, [&](am_header& h, std::byte* payload) {
    std::memcpy(h.word, w, sizeof h.word);
    if (len) std::memcpy(payload, src, len);
    return static_cast<uint32_t>(len);
  });
}

// Copies the pieces one after the other (their total checked by the caller).
template <class Card>
void endpoint<Card>::gather(std::byte* dst, const iovec* iov, int iovcnt) {
  for (int i = 0; i < iovcnt; ++i) {
    sys::short_copy(dst, iov[i].iov_base, iov[i].iov_len);
    dst += iov[i].iov_len;
  }
}

template <class Card>
status endpoint<Card>::request_medium(int dest, unsigned handler, const iovec* iov, int iovcnt,
                                      uint64_t arg, bool block) {
  if (status s = check_send(dest, handler); s != status::ok) return s;
  if (iovcnt < 0 || (iovcnt && !iov)) return status::invalid_argument;
  // The one length check: each piece and the running total within max_bulk
  // (no sum of huge lengths can wrap around).
  const uint64_t limit = max_bulk();
  uint64_t total = 0;
  for (int i = 0; i < iovcnt; ++i) {
    if (iov[i].iov_len > limit - total) return status::invalid_argument;
    total += iov[i].iov_len;
  }
  if (__builtin_expect(dest == my_proc_, 0)) {
    const uint64_t w[4] = {arg, 0, 0, 0};  // medium_word::arg; the length is the packet's
    gather(self_buffer_.data(), iov, iovcnt);
    return self_request(msg_kind::medium, handler, w, self_buffer_.data(), total);
  }
  return send_request(dest, msg_kind::medium, handler, block,
                      [&](am_header& h, std::byte* payload) {
                        h.word[medium_word::arg] = arg;
                        gather(payload, iov, iovcnt);
                        return static_cast<uint32_t>(total);
                      });
}

template <class Card>
template <bool check_pointers>
status endpoint<Card>::try_medium_now(int dest, unsigned handler, const void* head, size_t head_len,
                                      const void* body, size_t body_len, uint64_t arg) {
  if (__builtin_expect(state_ != handler_state::none, 0)) return status::busy;
  if (status s = check_send(dest, handler); s != status::ok) return s;
  const uint64_t limit = max_bulk();
  if (head_len > limit || body_len > limit - head_len) return status::invalid_argument;
  if (check_pointers && ((head_len && !head) || (body_len && !body)))
    return status::invalid_argument;
  if (__builtin_expect(dest == my_proc_, 0)) {
    const iovec iov[2] = {{const_cast<void*>(head), head_len}, {const_cast<void*>(body), body_len}};
    return request_medium(dest, handler, iov, 2, arg, false);
  }
  return send_request(dest, msg_kind::medium, handler, false,
                      [&](am_header& h, std::byte* payload) {
                        h.word[medium_word::arg] = arg;
                        sys::short_copy(payload, head, head_len);
                        sys::short_copy(payload + head_len, body, body_len);
                        return static_cast<uint32_t>(head_len + body_len);
                      });
}

template <class Card>
status endpoint<Card>::try_medium_packed(int dest, unsigned handler, pack_fn pack, void* pack_arg,
                                         uint64_t arg) {
  if (state_ != handler_state::none) return status::busy;
  if (status s = check_send(dest, handler); s != status::ok) return s;
  if (!pack) return status::invalid_argument;
  const uint64_t limit = max_bulk();
  const auto packed = [&](std::byte* at) {
    const size_t n = pack(at, pack_arg);
    if (__builtin_expect(n > limit, 0)) packed_too_long(n);
    return static_cast<uint32_t>(n);
  };
  if (__builtin_expect(dest == my_proc_, 0)) {
    const uint64_t w[4] = {arg, 0, 0, 0};  // medium_word::arg
    const uint32_t n = packed(self_buffer_.data());
    return self_request(msg_kind::medium, handler, w, self_buffer_.data(), n);
  }
  return send_request(dest, msg_kind::medium, handler, false,
                      [&](am_header& h, std::byte* payload) {
                        h.word[medium_word::arg] = arg;
                        return packed(payload);
                      });
}

template <class Card>
void endpoint<Card>::packed_too_long(size_t n) const {
  std::fprintf(stderr, "hpam: a pack callback wrote %zu bytes, past the %zu a message holds\n", n,
               max_bulk());
  std::abort();
}

template <class Card>
status endpoint<Card>::request_get(int dest, unsigned handler, uint64_t remote, void* local,
                                   size_t len, uint64_t arg, bool block) {
  if (status s = check_send(dest, handler); s != status::ok) return s;
  if (len > max_bulk() || (len && !local)) return status::invalid_argument;
  const uint64_t w[4] = {remote, arg, len, reinterpret_cast<uint64_t>(local)};
  if (dest == my_proc_) return self_request(msg_kind::get, handler, w, nullptr, 0);
  const expected_get get{static_cast<uint32_t>(len), reinterpret_cast<uint64_t>(local), arg};
  return send_request(
      dest, msg_kind::get, handler, block,
      [&](am_header& h, std::byte*) {
        std::memcpy(h.word, w, sizeof h.word);
        return 0u;
      },
      get);
}

// A reply goes into the reply buffer reserved for [src][instance],
// overwriting the previous reply (HPAM 5.2.1 step 2.e).
template <class Card>
template <class Build>
status endpoint<Card>::send_reply(hpam_token& t, msg_kind kind, unsigned handler, Build&& build) {
  if (state_ != handler_state::request || current_token_ != &t || !t.is_request)
    return rule_broken(state_ == handler_state::reply ? "a reply handler may not send"
                                                      : "reply outside its request handler");
  if (t.replied) return rule_broken("a request handler may reply only once");
  if (handler >= max_handlers) return status::invalid_argument;
  reply_desc& r = replies_.at(t.src, t.instance);
  std::byte* pkt = card_.tx_block(r.block);
  am_header* h = stamp_header(pkt, key_, {msg_class::reply, kind, t.instance, t.sequence}, handler);
  if (__builtin_expect(r.answers_resend, 0)) h->refusal = answers_resend;
  const uint32_t hdr = header_bytes(kind);
  r.length = hdr + build(*h, pkt + hdr);
  r.unstamped = false;                                // the block holds this reply
  card_.launch_built(t.src, r.block, pkt, r.length);  // as in send_request; t.src is a peer's
  t.replied = true;
  counters_[t.src].replies_sent++;
  return status::ok;
}

template <class Card>
status endpoint<Card>::reply_4(hpam_token& t, unsigned handler, const uint64_t (&args)[4]) {
  if (t.src == my_proc_ && current_token_ == &t)
    return self_reply(t, msg_kind::short4, handler, args, nullptr, 0);
  return send_reply(t, msg_kind::short4, handler, [&](am_header& h, std::byte*) {
    std::memcpy(h.word, args, sizeof h.word);
    return 0u;
  });
}

template <class Card>
status endpoint<Card>::reply_store(hpam_token& t, unsigned handler, const void* src, size_t len,
                                   uint64_t target, uint64_t arg) {
  if (len > max_bulk() || (len && !src)) return status::invalid_argument;
  const uint64_t w[4] = {target, arg, len, 0};
  if (t.src == my_proc_ && current_token_ == &t)
    return self_reply(t, msg_kind::store, handler, w, src, len);
  return send_reply(t, msg_kind::store, handler, [&](am_header& h, std::byte* payload) {
    std::memcpy(h.word, w, sizeof h.word);
    if (len) std::memcpy(payload, src, len);
    return static_cast<uint32_t>(len);
  });
}

// The hint's instance when free (inline), else the search (out of line).
template <class Card>
bool endpoint<Card>::acquire_instance(int dest, uint32_t& instance) {
  const uint32_t hint = instance_hint_[dest];
  if (__builtin_expect(!requests_.at(dest, hint).busy, 1)) {
    instance = hint;
    return true;
  }
  return search_instance(dest, instance);
}

// A send from outside a handler to a connected peer, not lost and not me,
// passes with two loads (inline, may_send_to); everything else takes the
// full checks.
template <class Card>
status endpoint<Card>::check_send(int dest, unsigned handler) {
  if (__builtin_expect(may_send_to(dest, handler), 1)) return status::ok;
  return check_send_slow(dest, handler);
}

template <class Card>
bool endpoint<Card>::may_send_to(int dest, unsigned handler) const {
  return state_ == handler_state::none &&
         static_cast<unsigned>(dest) < static_cast<unsigned>(nprocs_) && handler < max_handlers &&
         sendable_[dest];
}

}  // namespace hpam::am
