// Deferred acknowledgements (docs/DESIGN.md, "Acknowledgements and the
// small-message path"): when the empty acknowledgement of HPAM 5.2.1 step
// 2.e, once deferred, leaves. It waits per peer as a bit of a row
// (ack_rows.hpp); it rides on the next request to that peer
// (piggyback_acks), goes after the next request launched (without
// multi_ack), or leaves with the other acks of its peer in one ack packet
// (multi_ack) when a poll finds them due. This class holds that decision
// and its state; endpoint<Card> builds and launches the packets
// (endpoint_acks.hpp) through the `launch(peer, waiting)` it passes
// in, so the decision is tested alone (tests/am/test_deferred_acks.cc).
#pragma once

#include <cstdint>

#include "am/ack_rows.hpp"
#include "am/config.hpp"
#include "am/packet.hpp"

namespace hpam::am {

// multi_ack: while a stream arrives (a poll used its whole receive budget)
// the acks of a peer wait until ack_threshold(D) of them do, and the poll
// launches them at its end, together; a poll that drains its queue leaves
// its acks to ride on a request sent before the next poll, whose start
// launches what is left (or at once, if it handled nothing). Acks never
// wait more than ack_hold_polls polls that began with them waiting (the
// polls after the one that made them): a peer waiting for one ack is not
// kept waiting by a stream from others. Every ack_hold_polls / 2 such
// polls, at the poll's start, the rows that had acks waiting already at
// the last such point, and were not emptied since, leave
// (ack_rows::launch_aged): an ack that does not ride goes after more than
// half the hold and at most the whole of it, while a row whose acks rode
// meanwhile starts young.
// acks_wait_when_idle (the processes outnumber the cores: each poll that
// finds nothing gives the core away, and an ack launched alone costs a
// core that others wait for): a poll launches no ack only because it
// drained its queue; the acks wait for a request to ride on, as in a
// stream, until their row is due or ack_hold_polls polls have passed.
// A quarter of the window (at least 2): the sender gets its instances back
// while it still has three quarters to send on; one ack packet a half
// window left streams waiting for credits (docs/decisions.md).
constexpr uint32_t ack_threshold(uint32_t depth) {
  return depth / 4 > 2 ? depth / 4 : 2;
}
constexpr uint32_t ack_hold_polls = 16;
static_assert(ack_hold_polls >= 2 && ack_hold_polls % 2 == 0, "aged at every half hold");

class deferred_acks {
 public:
  explicit deferred_acks(const endpoint_config& cfg)
      : defer_(cfg.defer_acks),
        piggyback_(cfg.piggyback_acks),
        multi_ack_(cfg.multi_ack && cfg.defer_acks),
        wait_when_idle_(cfg.acks_wait_when_idle && cfg.defer_acks),
        due_(ack_threshold(cfg.depth)),
        capacity_(multi_ack_capacity(cfg.card.block_size, cfg.depth)) {
    rows_.resize(cfg.card.nprocs);
  }

  // Settings. Without defer, an ack is launched at once (send_ack).
  bool defer() const { return defer_; }
  bool multi_ack() const { return multi_ack_; }
  bool wait_when_idle() const { return wait_when_idle_; }
  uint32_t capacity() const { return capacity_; }  // ack_entry records per ack packet
  bool empty() const { return rows_.empty(); }

  // [peer][instance]'s plain ack (no refusal) of that sequence (its
  // ack_entry word) waits; it may ride.
  [[gnu::always_inline]] void add(int peer, uint32_t instance, uint32_t sequence) {
    rows_.defer(peer, instance, sequence);
  }
  // [peer][instance]'s waiting ack, if any, is replaced by a refusal that
  // leaves now (ack_rows::forget; sequence_of(i): the word of the ack
  // waiting at i).
  template <class SequenceOf>
  void forget(int peer, uint32_t instance, SequenceOf&& sequence_of) {
    rows_.forget(peer, instance, sequence_of);
  }
  // [peer][instance]'s waiting ack, if any, now has that word (ack_rows::restamp).
  void restamp(int peer, uint32_t instance, uint32_t sequence) {
    rows_.restamp(peer, instance, sequence);
  }

  // A request to peer is being built: may an ack ride on it (any waits)?
  bool may_ride() const { return piggyback_ && !rows_.empty(); }
  // The oldest ack of peer's row, taken to ride (ack_rows::take_rider).
  template <class SequenceOf>
  [[gnu::always_inline]] bool take_rider(int peer, ack_entry& e, SequenceOf&& sequence_of) {
    return rows_.take_rider(peer, e, sequence_of);
  }

  // The decision, at each point where acks may leave. `launch(peer,
  // waiting)` launches one peer's acks (bit i: instance i).
  //
  // After a request was launched: without multi_ack every waiting ack goes
  // now, behind the request and off its critical path; with it they are
  // gathered for the next poll.
  template <class Launch>
  [[gnu::always_inline]] void after_request(Launch&& launch) {
    if (!rows_.empty() && !multi_ack_) launch_rows(0, launch);
  }
  // A poll with nothing to serve (no ack waits, nothing arrived): a stream,
  // if one came, has ended.
  void quiet_poll() { streaming_ = false; }
  // A poll, before it takes packets: outside a stream, the acks left
  // waiting go first (they had a poll to ride on a request). In a stream
  // (wait_when_idle: at every poll) they go on waiting, and the poll
  // counts toward their hold: the hold counts the polls that began with
  // acks waiting, and ages the rows at every ack_hold_polls / 2 of them
  // (launch_aged). With no ack waiting (the last ones rode on
  // requests: a ping-pong) the hold starts again, so that it counts the
  // polls the oldest waiting ack has seen: an ack that does not ride
  // leaves by the start of the ack_hold_polls-th poll after the one that
  // made it, and the poll that made it (a ping-pong's every poll) does no
  // counting.
  template <class Launch>
  [[gnu::always_inline]] void before_receive(Launch&& launch) {
    if (rows_.empty()) {
      held_polls_ = 0;
    } else if (!streaming_ && !wait_when_idle_) {
      launch_rows(0, launch);
    } else if (++held_polls_ >= ack_hold_polls / 2) {
      launch_aged(launch);
    }
  }
  // A poll took `taken` packets, `budget_used` when as many as it may: a
  // stream (multi_ack) launches the rows that are due, a poll that took
  // nothing every row (wait_when_idle: the rows that are due). A row is
  // due once ack_threshold(D) acks wait in it: while fewer wait in all
  // rows together (a ping-pong's one ack), no row needs a look, and that
  // one test is all a ping-pong's poll pays here.
  template <class Launch>
  [[gnu::always_inline]] void after_receive(uint32_t taken, bool budget_used, Launch&& launch) {
    streaming_ = multi_ack_ & budget_used;
    if (__builtin_expect(rows_.waiting() >= due_, 0) && (streaming_ || wait_when_idle_))
      (void)launch_rows(due_, launch);
    else if (__builtin_expect(taken == 0, 0) && !wait_when_idle_ && !rows_.empty())
      (void)launch_rows(0, launch);
  }
  // Every waiting ack, now (the sending half of a poll: resend_due, resend_idle).
  template <class Launch>
  void flush_all(Launch&& launch) {
    if (!rows_.empty()) launch_rows(0, launch);
  }

 private:
  template <class Launch>
  [[gnu::noinline]] void launch_aged(Launch launch) {
    held_polls_ = 0;
    rows_.launch_aged(launch);
  }
  // Launches the rows in which at least `due` acks wait (0: every row);
  // true when no ack is left waiting.
  template <class Launch>
  [[gnu::noinline]] bool launch_rows(uint32_t due, Launch launch) {
    rows_.flush([due](uint32_t n) { return n >= due; }, launch);
    if (!rows_.empty()) return false;
    held_polls_ = 0;
    return true;
  }

  ack_rows rows_;            // the acks waiting, per peer
  bool defer_;               // defer_acks: else each ack is launched at once
  bool piggyback_;           // piggyback_acks: a plain ack rides on a request to its peer
  bool multi_ack_;           // deferred plain acks to a peer share one packet
  bool wait_when_idle_;      // acks_wait_when_idle: an idle poll launches only what is due
  bool streaming_ = false;   // multi_ack: the last poll used its whole budget
  uint32_t due_;             // ack_threshold(D): acks that make a row due
  uint32_t capacity_;        // ack_entry records one ack packet carries
  uint32_t held_polls_ = 0;  // polls that launched only some rows, since no ack waited or
                             // since the acks were last aged
};

}  // namespace hpam::am
