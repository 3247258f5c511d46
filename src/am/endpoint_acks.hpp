// Acknowledgements of endpoint<Card>: the empty acknowledgement that
// answers a request whose handler did not reply, stored in the reply block
// for a duplicate (HPAM 5.2.1 step 2.e), and what the emulation adds to it
// (docs/DESIGN.md): acks deferred per peer as rows of bits (ack_rows.hpp),
// riding as an ack_entry on the next request to that peer, or launched
// together, many to one packet (multi_ack); and, on the requester's side,
// an ack packet checked and each acknowledgement in it taken.
#pragma once

#include <cstring>

#include "am/endpoint.hpp"

namespace hpam::am {

// An ack waiting for dest (only plain ones wait) rides on the request (or is left for
// the next flush when there is no room after the payload): an ack_entry at
// the end of the packet instead of a packet of its own. The stored ack in
// the reply block stays, for a duplicate of the request it answers.
// The entry was made when the ack was deferred (send_ack): riding reads
// only the row. A kind whose header is shorter than packet_header_size by
// an entry or more (medium: the BTL's and UCX's sends) always has the room:
// its payload is at most max_bulk(), the block less packet_header_size.
template <class Card>
void endpoint<Card>::ride_ack(int dest, msg_kind kind, am_header& h, std::byte* pkt,
                              uint32_t& length) {
  const bool room_by_kind = header_bytes(kind) + sizeof(ack_entry) <= packet_header_size;
  ack_entry t;
  if ((!room_by_kind && length + sizeof(ack_entry) > card_.block_size()) ||
      !acks_.take_rider(dest, t, stored_ack_words(dest)))
    return;
  std::memcpy(pkt + length, &t, sizeof t);
  length += sizeof t;
  h.refusal = carries_ack;
  counters_[dest].acks_piggybacked++;
}

// The stored reply r of [src][instance] becomes this acknowledgement. A
// deferred one is written into the reply block only when a packet needs it
// (stamp_stored_ack): launched on its own, first in a multi-ack, or
// reflected to a duplicate; carried as an entry it never touches the block.
template <class Card>
void endpoint<Card>::send_ack(int src, uint32_t instance, uint32_t sequence, refusal why,
                              reply_desc& r) {
  r.length = header_bytes(msg_kind::ack);  // stored: a duplicate request is answered with it
  r.ack_sequence = sequence;
  r.ack_refusal = static_cast<uint8_t>(why);
  r.unstamped = true;
  counters_[src].acks_sent++;
  if (__builtin_expect(!acks_.defer() || why != refusal::none, 0)) {
    launch_ack_now(src, instance, r);
    return;
  }
  acks_.add(src, instance, stored_ack_word(r));
}

// The ack_entry word of the ack stored in r: its sequence, flagged when it
// answers a resent copy.
template <class Card>
uint32_t endpoint<Card>::stored_ack_word(const reply_desc& r) {
  return r.ack_sequence | (r.answers_resend ? entry_answers_resend : 0);
}

// An ack that does not wait: every ack without defer_acks, and a refusal
// always (a packet of its own, never riding nor gathered). A plain ack
// still waiting on that instance (only a peer that sent the next request
// before it had the answer makes one) is dropped: the stored reply is this
// one now.
template <class Card>
void endpoint<Card>::launch_ack_now(int src, uint32_t instance, reply_desc& r) {
  if (acks_.defer()) acks_.forget(src, instance, stored_ack_words(src));
  stamp_stored_ack(src, instance, r);
  card_.launch(src, r.block, r.length);
}

template <class Card>
void endpoint<Card>::stamp_stored_ack(int src, uint32_t instance, reply_desc& r) {
  if (!r.unstamped) return;
  am_header* h = stamp_header(card_.tx_block(r.block), key_,
                              {msg_class::reply, msg_kind::ack, instance, r.ack_sequence}, 0,
                              static_cast<refusal>(r.ack_refusal));
  if (r.answers_resend) h->refusal |= answers_resend;
  r.unstamped = false;
}

// One peer's waiting acks (bit i: [peer][i], all plain): without multi_ack
// each goes as the packet stored in its reply block; with multi_ack they go
// together, each packet the stored ack of its lowest instance followed by
// ack_entry records for up to acks_.capacity() more. The stored ack (its
// length) is unchanged: a duplicate request still gets exactly its own ack.
template <class Card>
void endpoint<Card>::launch_acks(int peer, uint64_t waiting) {
  if (!acks_.multi_ack()) {
    for (; waiting != 0; waiting &= waiting - 1) {
      const uint32_t i = static_cast<uint32_t>(__builtin_ctzll(waiting));
      reply_desc& r = replies_.at(peer, i);
      stamp_stored_ack(peer, i, r);
      card_.launch(peer, r.block, r.length);
    }
    return;
  }
  uint64_t together = waiting;
  while (together != 0) {
    const uint32_t first = static_cast<uint32_t>(__builtin_ctzll(together));
    reply_desc& r = replies_.at(peer, first);
    stamp_stored_ack(peer, first, r);
    together &= together - 1;
    std::byte* pkt = card_.tx_block(r.block);
    uint32_t length = r.length;
    for (uint32_t k = 0; k < acks_.capacity() && together != 0; ++k, together &= together - 1) {
      const uint32_t i = static_cast<uint32_t>(__builtin_ctzll(together));
      const ack_entry e{stored_ack_word(replies_.at(peer, i)), i};
      std::memcpy(pkt + length, &e, sizeof e);
      length += sizeof e;
      counters_[peer].acks_combined++;
    }
    card_.launch(peer, r.block, length);
  }
}

// An ack packet with a payload (multi_ack): a plain acknowledgement of the
// reply class whose payload is whole ack_entry records, at most
// multi_ack_capacity of them, each naming an instance below D that no other
// acknowledgement in the packet names. Copied once into the arrival here;
// anything else makes the whole packet malformed (nothing in it is taken).
template <class Card>
bool endpoint<Card>::acks_well_formed(arrival& a) const {
  const control_word c = read_control(a.h);
  const uint32_t n = a.payload_len / sizeof(ack_entry);
  if (c.cls != msg_class::reply ||
      refusal_of(a.h.refusal) != static_cast<uint16_t>(refusal::none) ||
      a.payload_len % sizeof(ack_entry) != 0 || n > acks_.capacity())
    return false;
  std::memcpy(a.more, a.payload, a.payload_len);
  uint64_t named = uint64_t{1} << c.instance;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = a.more[k].instance;
    if (i >= depth_ || (named >> i) & 1) return false;
    named |= uint64_t{1} << i;
  }
  a.more_acks = n;
  return true;
}

// An acknowledgement packet: its own instance and sequence, then each
// ack_entry it carries (checked first, acks_well_formed: a malformed
// packet is counted and nothing in it taken), each matched on its own: a
// stale one (a duplicate, or an answer to a resent request already
// answered) is counted and dropped without touching the others.
template <class Card>
void endpoint<Card>::on_ack_packet(arrival& a, control_word c) {
  a.more_acks = 0;
  if (a.payload_len != 0 && !acks_well_formed(a)) {  // nothing in it is taken
    counters_[a.src].malformed++;
    return;
  }
  answer_batch_.open = early_resend_ && a.more_acks != 0;
  take_ack(a.src, c.instance,
           c.sequence | ((a.h.refusal & answers_resend) ? entry_answers_resend : 0),
           refusal_of(a.h.refusal));
  for (uint32_t k = 0; k < a.more_acks; ++k)
    take_ack(a.src, a.more[k].instance, a.more[k].sequence, static_cast<uint16_t>(refusal::none));
  if (__builtin_expect(answer_batch_.open, 0)) close_answer_batch(a.src);
}

// An acknowledgement of my request [instance] at sequence from src: an ack
// packet's own, or an ack_entry riding on a request or carried by an ack
// packet (plain); its instance checked by accept. A stale one (a duplicate,
// or an answer to a resent request already answered) is counted and dropped.
template <class Card>
void endpoint<Card>::take_ack(int src, uint32_t instance, uint32_t sequence, uint16_t why) {
  request_desc& d = requests_.at(src, instance);
  if (!d.busy || (sequence & ~entry_answers_resend) != d.sequence) {
    counters_[src].stale_replies++;
    return;
  }
  on_ack(src, d, why);
  answered(src, d, instance, (sequence & entry_answers_resend) != 0);
}

// An acknowledgement (a packet of its own or carried by another) of my
// request d: a refusal or an ack where bytes were due is reported.
template <class Card>
void endpoint<Card>::on_ack(int src, request_desc& d, uint16_t why) {
  if (why >= refusal_count) {
    counters_[src].malformed++;
    refused(src, d, "its acknowledgement was malformed");
  } else if (why != static_cast<uint16_t>(refusal::none)) {
    counters_[src].refusals_received++;
    refused(src, d,
            why == static_cast<uint16_t>(refusal::no_handler)
                ? "the peer refused it: no handler of that kind at that index"
                : "the peer refused it: the address range is not inside its segment "
                  "(hpam_set_segment)");
  } else if (d.kind == msg_kind::get) {
    counters_[src].malformed++;
    refused(src, d, "the peer answered with an empty acknowledgement instead of the bytes");
  }
}

}  // namespace hpam::am
