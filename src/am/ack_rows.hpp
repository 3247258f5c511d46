// Deferred acknowledgements (endpoint_config::defer_acks), kept per peer:
// the peer's row holds one bit per instance whose acknowledgement waits to
// be launched. Only plain acks (no refusal) wait, so every one of them may
// ride on the next request to that peer (piggyback_acks); a refusal leaves
// at once as a packet of its own (endpoint::send_ack). A send touches only its destination's row
// (O(1)); a flush visits only the rows listed since the last flush, and may launch only the rows
// that are due (multi_ack: enough acks waiting), keeping the others listed. The acks' packets
// themselves stay in the reply descriptors' blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "am/packet.hpp"

namespace hpam::am {

class ack_rows {
 public:
  static_assert(max_depth <= 64, "a row is one 64-bit word of instances");

  // Setup: nprocs empty rows (capacity for every [peer][instance]).
  void resize(int nprocs) {
    rows_.assign(static_cast<size_t>(nprocs), row{});
    listed_.clear();
    listed_.reserve(static_cast<size_t>(nprocs));
    waiting_ = 0;
  }

  bool empty() const { return waiting_ == 0; }
  uint32_t waiting() const { return waiting_; }  // acks waiting, all peers
  bool waits(int peer, uint32_t instance) const {
    return (rows_[static_cast<size_t>(peer)].waiting >> instance) & 1;
  }

  // [peer][instance]'s plain ack waits (again), answering the request of
  // that sequence (with entry_answers_resend when it answers a resent
  // copy: the ack_entry's word). An ack already waiting there is the same
  // packet slot: it is not counted twice, and the row's next rider, if it
  // is that one, is the new ack.
  [[gnu::always_inline]] void defer(int peer, uint32_t instance, uint32_t sequence) {
    row& r = rows_[static_cast<size_t>(peer)];
    const uint64_t bit = uint64_t{1} << instance;
    if (r.waiting == 0 || r.oldest == instance) {
      r.oldest = static_cast<uint8_t>(instance);
      r.oldest_sequence = sequence;
    }
    if (!(r.waiting & bit)) {
      r.waiting |= bit;
      ++waiting_;
    }
    if (!r.listed) {
      r.listed = true;
      listed_.push_back(static_cast<uint32_t>(peer));  // capacity nprocs: no allocation
    }
  }

  // [peer][instance]'s waiting ack, if any, now answers with `sequence`
  // (a resent copy of its request came since: the flag changed).
  void restamp(int peer, uint32_t instance, uint32_t sequence) {
    row& r = rows_[static_cast<size_t>(peer)];
    if (((r.waiting >> instance) & 1) && r.oldest == instance) r.oldest_sequence = sequence;
  }

  // [peer][instance]'s waiting ack, if any, is no longer wanted: a refusal
  // made there since leaves as a packet of its own (the stored reply is the
  // refusal now). The row stays listed. sequence_of(i): the word of the
  // ack waiting at instance i (the stored one), for the next rider.
  template <class SequenceOf>
  void forget(int peer, uint32_t instance, SequenceOf&& sequence_of) {
    row& r = rows_[static_cast<size_t>(peer)];
    const uint64_t bit = uint64_t{1} << instance;
    if (!(r.waiting & bit)) return;
    r.waiting &= ~bit;
    --waiting_;
    if (r.waiting == 0)
      r.aged = false;
    else if (r.oldest == instance)
      next_oldest(r, sequence_of);
  }

  // Takes one waiting ack of peer's row to ride on a request to that
  // peer, the oldest first: the first at or after the row's first deferred
  // instance, cyclically (requests arrive in launch order, which wraps
  // around the instances; an answer to a later request arriving first
  // would tell the sender of a loss: endpoint::resend_early). Its entry
  // was made when it was deferred (or, for an ack that waited behind
  // another, when that one left: sequence_of, out of the hot path); false
  // when the row has none.
  template <class SequenceOf>
  [[gnu::always_inline]] bool take_rider(int peer, ack_entry& e, SequenceOf&& sequence_of) {
    row& r = rows_[static_cast<size_t>(peer)];
    const uint64_t waiting = r.waiting;
    if (__builtin_expect(waiting == 0, 0)) return false;
    e.instance = r.oldest;
    e.sequence = r.oldest_sequence;
    r.waiting = waiting & ~(uint64_t{1} << e.instance);
    --waiting_;
    if (__builtin_expect(r.waiting != 0, 0))
      next_oldest(r, sequence_of);
    else
      r.aged = false;  // emptied: its next ack starts young
    return true;       // the row stays listed until the next flush (it may fill again)
  }

  // Acks waiting for peer.
  uint32_t count(int peer) const {
    return static_cast<uint32_t>(__builtin_popcountll(rows_[static_cast<size_t>(peer)].waiting));
  }

  // Empties every listed row for which due(number of acks waiting there)
  // holds, calling launch(peer, waiting) with its bits first; the other rows stay as they are (and
  // listed). A row the riders emptied is dropped from the list.
  template <class Due, class Launch>
  void flush(Due&& due, Launch&& launch) {
    walk([&due](row&, uint32_t n) { return !due(n); }, launch);
  }

  // Ages the rows: every listed row that had acks waiting at the last call
  // and has not been empty since is launched (launch(peer, waiting), all of
  // its acks: one packet with multi_ack), the others with acks waiting are
  // marked. Called every n polls, a row's oldest ack that does not ride
  // leaves after more than n and at most 2n polls. Rows emptied by riders
  // are dropped from the list.
  template <class Launch>
  void launch_aged(Launch&& launch) {
    walk(
        [](row& r, uint32_t) {
          if (r.aged) return false;
          r.aged = true;
          return true;
        },
        launch);
  }

  // Calls launch(peer, waiting) for every row with acks waiting,
  // then empties every row.
  template <class Launch>
  void flush_all(Launch&& launch) {
    flush([](uint32_t) { return true; }, launch);
  }

 private:
  struct row {
    uint64_t waiting = 0;          // bit i: [peer][i]'s plain ack waits to be launched (or to ride)
    uint32_t oldest_sequence = 0;  // the oldest waiting ack's ack_entry::sequence (the next rider)
    uint8_t oldest = 0;            // its instance: where take_rider takes, and looks on from
    bool listed = false;           // the peer is in listed_
    bool aged = false;             // acks waited at the last launch_aged, none left since
  };
  static_assert(sizeof(row) == 16, "a row is 16 bytes: rows_[peer] is a shift");

  // Every listed row: one with acks waiting that keep(row, how many)
  // keeps stays listed as it is; the others are emptied, their acks
  // launched (launch(peer, waiting)), and dropped from the list.
  template <class Keep, class Launch>
  void walk(Keep&& keep, Launch&& launch) {
    size_t kept = 0;
    for (uint32_t peer : listed_) {
      row& r = rows_[peer];
      const uint32_t n = static_cast<uint32_t>(__builtin_popcountll(r.waiting));
      if (n != 0 && keep(r, n)) {
        listed_[kept++] = peer;
        continue;
      }
      const row taken = r;
      r = row{};
      waiting_ -= n;
      if (n != 0) launch(static_cast<int>(peer), taken.waiting);
    }
    listed_.resize(kept);  // never grows: no allocation
  }

  // The waiting ack after r.oldest (which has left), cyclically, becomes
  // the next rider; its word is the stored ack's. r has one waiting.
  // sequence_of by value (the endpoint's: a pointer and a peer, passed in
  // registers): by reference, the send built it in memory, two stores at
  // every request, for a call it rarely makes.
  template <class SequenceOf>
  [[gnu::noinline]] static void next_oldest(row& r, SequenceOf sequence_of) {
    const uint32_t from = (r.oldest + 1u) & 63;
    const uint64_t turned =
        from == 0 ? r.waiting : (r.waiting >> from) | (r.waiting << (64 - from));
    r.oldest = static_cast<uint8_t>((from + static_cast<uint32_t>(__builtin_ctzll(turned))) & 63);
    r.oldest_sequence = sequence_of(r.oldest);
  }

  std::vector<row> rows_;         // per peer
  std::vector<uint32_t> listed_;  // peers whose row filled since the last flush
  uint32_t waiting_ = 0;          // set bits of every row's waiting
};

}  // namespace hpam::am
