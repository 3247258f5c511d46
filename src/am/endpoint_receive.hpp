// The receive side of endpoint<Card> (HPAM appendix B, HPAM_poll): the
// packets waiting in the card taken up to the receive budget, each through
// the acceptance checks (CRC, header, protection key (5.3), type, instance)
// on one copy of its header, then matched by sequence number against the
// descriptor table (5.2.1 steps 2.a-b, 3.a-b) and dispatched: a new request
// runs its handler (2.c), a duplicate is answered by reflecting the stored
// reply, a matching reply runs its handler and frees its instance (3.c-d).
// The acknowledgements sent and taken here: endpoint_acks.hpp; the timeout
// walk each poll ends with: endpoint_timeouts.hpp.
#pragma once

#include <cstring>
#include <string>

#include "am/endpoint.hpp"

namespace hpam::am {

// An idle poll (nothing arrived, no descriptor due) is a few loads and
// stores inline; the work is out of line. Inline wherever this definition
// is seen (the C API's poll): an idle poll makes no call. With acks
// waiting (every idle poll of a collective loop, acks_wait_when_idle) it
// makes serve_arrivals' two ack steps with nothing taken, inline, and the
// same decisions: the card is asked first, where serve_arrivals would have
// found nothing after the acks it launched (they go to other cards).
template <class Card>
[[gnu::always_inline]] inline status endpoint<Card>::poll(int* handled, bool report) {
  if (__builtin_expect(state_ != handler_state::none, 0))
    return rule_broken("poll called from a handler");
  card_.service();
  ++polls_;
  uint32_t n = 0;
  if (__builtin_expect(card_.arrival_pending(), 0)) {
    n = serve_arrivals();
  } else if (__builtin_expect(!acks_.empty(), 0)) {
    acks_.before_receive(ack_launcher());
    took_packets_ = false;
    acks_.after_receive(0, false, ack_launcher());  // a budget is at least 1: not used up
  } else {
    acks_.quiet_poll();
    took_packets_ = false;
  }
  check_timeouts(true);
  if (handled) *handled = static_cast<int>(n);
  if (__builtin_expect(!report || !(newly_unreachable_ || newly_refused_), 1)) return status::ok;
  return news();
}

// Deferred acks and arrivals, as deferred_acks decides: outside a stream
// the acks left waiting go before the packets are taken; then packets up
// to the budget; then a stream's acks as they come due, or all of them if
// nothing arrived (they had a poll to ride on a request).
// The budget: on a wire that cannot lose, a poll that follows one that
// took nothing takes one packet and returns, so a lone message (a
// ping-pong's) is answered at once; only while packets keep coming (the
// last poll took some: a stream) does a poll take up to receive_budget_.
// Looking for a second packet costs a cache line the sender owns (Medusa's
// sender asks for the next cell ahead), on the critical path of the
// answer (docs/decisions.md). A wire that can lose takes up to
// receive_budget_ at every poll: a packet left in the card defers the
// timeouts' resends (answer_may_wait), and bunches of held-back packets
// are that wire's common case.
template <class Card>
uint32_t endpoint<Card>::serve_arrivals() {
  acks_.before_receive(ack_launcher());
  const uint32_t budget = took_packets_ ? receive_budget_ : lone_budget_;
  if (budget == 0) __builtin_unreachable();  // setup_problem refuses 0: n == budget took packets
  const uint32_t n = receive_packets(budget);
  took_packets_ = n != 0;
  acks_.after_receive(n, n == budget, ack_launcher());
  return n;
}

// What poll reports once: a peer given up on, else a refusal.
template <class Card>
status endpoint<Card>::news() {
  if (newly_unreachable_) {
    newly_unreachable_ = false;
    return status::peer_unreachable;
  }
  newly_refused_ = false;
  return status::rejected;
}

// A budget is at least 1 (setup_problem): the first look at the card
// is not preceded by a test of the budget.
template <class Card>
uint32_t endpoint<Card>::receive_packets(uint32_t budget) {
  nic::rx_packet p;
  uint32_t n = 0;
  do {
    if (!card_.receive(p)) break;
    handle_packet(p);
    card_.release(p);
  } while (++n < budget);
  return n;
}

// Acceptance checks, in the paper's order: CRC, header sanity, key, type.
// The source is the card's (the sender it knows delivered the packet, the
// wire header checked against it), never a field of the packet. The
// protocol header is copied out of the card block once, here; every check
// and every later use reads the copy (a peer may rewrite the block).
// What the card has checked is not checked again (nic/card.hpp, rx_packet):
// a deliverable packet's length lies within one block and its source is a
// process of the job (not this one: the card never delivers my own packets
// to me, but a forged entry could name me, so that stays checked unless
// the card's own checks exclude it on every path: Card::may_deliver_mine).
template <class Card>
bool endpoint<Card>::accept(const nic::rx_packet& p, arrival& a, control_word& c, bool& has_rider,
                            ack_entry& rider) {
  if (__builtin_expect(!p.crc_ok, 0)) {
    if (!p.rejected) counters_[my_proc_].crc_failures++;  // a refused header the card counted
    return false;
  }
  if (__builtin_expect(p.length < min_packet_size || (Card::may_deliver_mine && p.src == my_proc_),
                       0)) {
    counters_[my_proc_].malformed++;
    return false;
  }
  const int src = p.src;
  // A block holds at least packet_header_size bytes: the copy stays inside it.
  std::memcpy(&a.h, p.data + nic::wire_header_size, sizeof a.h);
  if (key_check_ && a.h.key != key_) {
    counters_[src].key_rejections++;
    return false;
  }
  c = read_control(a.h);
  const bool request = c.cls == msg_class::request;
  has_rider = request && (a.h.refusal & carries_ack) != 0;
  const uint32_t trailer = has_rider ? sizeof(ack_entry) : 0;
  if (c.instance >= depth_ || static_cast<uint32_t>(c.kind) >= msg_kind_count ||
      a.h.handler >= max_handlers || p.length < header_bytes(c.kind) + trailer ||
      (request && (a.h.refusal & ~request_flags) != 0)) {
    counters_[src].malformed++;
    return false;
  }
  if (trailer) {
    std::memcpy(&rider, p.data + p.length - trailer, sizeof rider);
    if (rider.instance >= depth_) {  // names no instance: the whole packet is malformed
      counters_[src].malformed++;
      return false;
    }
  }
  if (__builtin_expect(!connected_[src], 0)) {  // one load on the way of a known peer
    connect_on_arrival(src);
    if (!connected_[src]) return false;  // counted there
  }
  a.src = src;
  a.payload = p.data + header_bytes(c.kind);
  a.payload_len = p.length - header_bytes(c.kind) - trailer;
  return true;  // an ack packet's records are checked on its way (on_ack_packet)
}

template <class Card>
void endpoint<Card>::handle_packet(const nic::rx_packet& p) {
  arrival a;
  control_word c;
  bool has_rider;
  ack_entry rider;
  if (!accept(p, a, c, has_rider, rider)) return;
  if (c.cls == msg_class::request) {
    if (has_rider)  // first: it may free the instance the handler's send needs
      take_ack(a.src, rider.instance, rider.sequence, static_cast<uint16_t>(refusal::none));
    on_request(a, c);
  } else {
    on_reply(a);
  }
}

// Whether a request is malformed (dropped), refused (negatively
// acknowledged) or accepted.
template <class Card>
refusal endpoint<Card>::check_request(const arrival& a, msg_kind kind) const {
  const am_header& h = a.h;
  // Indexed as dispatch indexes it (unsigned): the entry is found once for both.
  const handler_entry& e = handlers_[static_cast<unsigned>(h.handler)];
  switch (kind) {
    case msg_kind::short4:
      if (a.payload_len != 0) return refusal::malformed;
      return e.short4 ? refusal::none : refusal::no_handler;
    case msg_kind::store:
      if (h.word[bulk_word::length] != a.payload_len) return refusal::malformed;
      if (!e.bulk) return refusal::no_handler;
      return in_segment(h.word[bulk_word::target], a.payload_len) ? refusal::none
                                                                  : refusal::outside_segment;
    case msg_kind::medium:
      return e.bulk ? refusal::none : refusal::no_handler;
    case msg_kind::get:
      if (a.payload_len != 0 || h.word[bulk_word::length] > max_bulk()) return refusal::malformed;
      return in_segment(h.word[bulk_word::target], h.word[bulk_word::length])
                 ? refusal::none
                 : refusal::outside_segment;
    case msg_kind::ack:
      return refusal::malformed;
  }
  return refusal::malformed;
}

// A new request runs its handler; a duplicate (the previous sequence number
// on this instance) is answered from the stored reply and never runs the
// handler again (HPAM 5.2.1). A malformed request consumes nothing and gets
// no answer; a refused one consumes its sequence number and is answered by
// a negative acknowledgement (stored, so a duplicate gets it too).
template <class Card>
void endpoint<Card>::on_request(const arrival& a, const control_word c) {
  const int src = a.src;
  reply_desc& r = replies_.at(src, c.instance);
  if (c.sequence != r.expected) {
    if (c.sequence == previous_sequence(r.expected) && r.length != 0) {
      stamp_stored_ack(src, c.instance, r);
      if (a.h.refusal & resent) {  // the stored reply now answers a resent copy too
        r.answers_resend = true;
        header_of(card_.tx_block(r.block))->refusal |= answers_resend;
        if (acks_.defer()) acks_.restamp(src, c.instance, stored_ack_word(r));  // if it waits
      }
      card_.relaunch(src, r.block, r.length);  // reflect the stored reply
      counters_[src].duplicates_reflected++;
    } else {
      counters_[src].malformed++;
    }
    return;
  }
  const refusal why = check_request(a, c.kind);
  if (why == refusal::malformed) {
    counters_[src].malformed++;
    return;
  }
  r.expected = next_sequence(c.sequence);
  r.answers_resend = (a.h.refusal & resent) != 0;
  if (why != refusal::none) {
    if (why == refusal::outside_segment)
      counters_[src].segment_rejections++;
    else
      counters_[src].malformed++;  // names no handler of its kind
    send_ack(src, c.instance, c.sequence, why, r);
    return;
  }
  hpam_token t{this, owner_, src, c.instance, c.sequence, true, false};
  run_request_handler(t, a, c.kind);
  if (!t.replied) send_ack(src, c.instance, t.sequence, refusal::none, r);
  counters_[src].requests_received++;
}

template <class Card>
void endpoint<Card>::run_request_handler(hpam_token& t, const arrival& a, const msg_kind kind) {
  state_ = handler_state::request;
  current_token_ = &t;
  // A medium request (the BTL's and the UCX transport's every send) is
  // tested first: the other kinds' tests stay off its way.
  if (__builtin_expect(kind == msg_kind::medium, 1))
    dispatch(t, msg_kind::medium, a.h.handler, a.h.word, a.payload, a.payload_len);
  else if (kind == msg_kind::get)
    serve_get(t, a.h);
  else
    dispatch(t, kind, a.h.handler, a.h.word, a.payload, a.payload_len);
  state_ = handler_state::none;
  current_token_ = nullptr;
}

// A get is served by the layer: the reply carries the bytes (from inside my
// segment, checked before) to the requester, whose request descriptor says
// where they go and which handler runs there.
template <class Card>
void endpoint<Card>::serve_get(hpam_token& t, const am_header& h) {
  const auto* src = reinterpret_cast<const void*>(h.word[bulk_word::target]);
  (void)reply_store(t, h.handler, src, h.word[bulk_word::length], h.word[bulk_word::local],
                    h.word[bulk_word::arg]);
}

// Whether a (non-ack) reply answers its request as asked: a get is answered
// by a store of exactly the bytes asked for; a store reply to anything else
// lands inside my segment; the handler it names exists.
template <class Card>
bool endpoint<Card>::reply_ok(const request_desc& d, const arrival& a, const msg_kind kind) const {
  const am_header& h = a.h;
  if (d.kind == msg_kind::get)
    return kind == msg_kind::store && a.payload_len == d.get_length && handlers_[d.handler].bulk;
  switch (kind) {
    case msg_kind::short4:
      return a.payload_len == 0 && handlers_[h.handler].short4;
    case msg_kind::store:
      return h.word[bulk_word::length] == a.payload_len && handlers_[h.handler].bulk &&
             in_segment(h.word[bulk_word::target], a.payload_len);
    default:
      return false;
  }
}

// A reply matches when its instance is busy and its sequence is the one
// sent; anything else is stale (a duplicate or a reply to a resent request
// already answered) and dropped. A matching reply frees the instance even
// when it fails its checks (the request was answered); a refusal or a bad
// reply is counted and reported by the next poll.
template <class Card>
void endpoint<Card>::on_reply(arrival& a) {
  const int src = a.src;
  const control_word c = read_control(a.h);  // as accept decoded it
  if (c.kind == msg_kind::ack) {
    on_ack_packet(a, c);
    return;
  }
  request_desc& d = requests_.at(src, c.instance);
  if (!d.busy || c.sequence != d.sequence) {
    counters_[src].stale_replies++;
    return;
  }
  if (!reply_ok(d, a, c.kind)) {
    counters_[src].malformed++;
    if (c.kind == msg_kind::store && d.kind != msg_kind::get) counters_[src].segment_rejections++;
    refused(src, d, "its reply did not match the request or lay outside my segment; ignored");
  } else {
    hpam_token t{this, owner_, src, c.instance, c.sequence, false, false};
    state_ = handler_state::reply;
    current_token_ = &t;
    if (d.kind == msg_kind::get) {
      const uint64_t w[4] = {d.get_local, d.get_arg, d.get_length, 0};
      dispatch(t, msg_kind::store, d.handler, w, a.payload, a.payload_len);
    } else {
      dispatch(t, c.kind, a.h.handler, a.h.word, a.payload, a.payload_len);
    }
    state_ = handler_state::none;
    current_token_ = nullptr;
  }
  answered(src, d, c.instance, (a.h.refusal & answers_resend) != 0);
}

// The request on this instance has its answer: the instance is free.
// Loss recovery's bookkeeping and the answer hook, each rare on the way of
// an answer, are behind one test of both (answer_more_).
template <class Card>
void endpoint<Card>::answered(int src, request_desc& d, uint32_t instance, bool answers_resend) {
  if (__builtin_expect(answer_more_, 0)) {
    if (lossy_) on_answer_when_lossy(src, d, instance, answers_resend);
    if (answer_hook_ != nullptr) tell_answered(src, d);
  }
  d.busy = false;
  if (!ordered_) instance_hint_[src] = instance;  // hpam_free[src] = buf (ordered: keep the turn)
  counters_[src].replies_received++;
}

// The answer hook with the request's argument word, read from the packet
// kept in its block for a resend (a get's from its descriptor).
template <class Card>
void endpoint<Card>::tell_answered(int src, const request_desc& d) {
  const am_header* h = header_of(card_.tx_block(d.block));
  const uint64_t arg = d.kind == msg_kind::get      ? d.get_arg
                       : d.kind == msg_kind::medium ? h->word[medium_word::arg]
                       : d.kind == msg_kind::store  ? h->word[bulk_word::arg]
                                                    : h->word[0];
  answer_hook_(answer_ctx_, src, d.handler, arg);
}

template <class Card>
void endpoint<Card>::refused(int peer, const request_desc& d, const char* why) {
  static const char* const kinds[msg_kind_count] = {"short", "store", "medium", "get", "ack"};
  newly_refused_ = true;
  last_error_ = std::string("hpam: a ") + kinds[static_cast<uint32_t>(d.kind) % msg_kind_count] +
                " request (handler " + std::to_string(d.handler) + ") from process " +
                std::to_string(my_proc_) + " to process " + std::to_string(peer) + " of job " +
                job_ + " was not carried out: " + why;
}

template <class Card>
void endpoint<Card>::dispatch(hpam_token& t, msg_kind kind, unsigned handler,
                              const uint64_t (&w)[4], const std::byte* payload, size_t len) {
  const handler_entry& e = handlers_[handler];
  switch (kind) {
    case msg_kind::short4:
      e.short4(&t, e.ctx, w[0], w[1], w[2], w[3]);
      break;
    case msg_kind::store: {
      void* target = reinterpret_cast<void*>(w[bulk_word::target]);
      if (len) std::memcpy(target, payload, len);
      e.bulk(&t, e.ctx, target, len, w[bulk_word::arg]);
      break;
    }
    case msg_kind::medium:
      e.bulk(&t, e.ctx, const_cast<std::byte*>(payload), len, w[medium_word::arg]);
      break;
    default:
      break;
  }
}

}  // namespace hpam::am
