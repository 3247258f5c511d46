// The timeout walk of endpoint<Card> and what follows a timeout (HPAM
// 5.2.1, appendix B): each poll checks checks_per_poll (K) request
// descriptors in a circular walk over [peer][instance] (timeout_cursor),
// stamping a descriptor sent since the walk last passed; a timed-out
// request is resent with its timeout doubled (up to backoff_limit), unless
// the peer cannot have answered yet (resend_premature, defer_resend); past
// the give-up time the peer is looked at (observe) and given up on when it
// is gone, stopped, finished or ignoring me, never when it lives and
// computes (the liveness rule: docs/DESIGN.md). Also the sending half of a
// poll (resend_due, and resend_idle for a background thread). Loss
// recovery on top of the walk: endpoint_loss_recovery.hpp.
#pragma once

#include <algorithm>
#include <string>

#include "am/endpoint.hpp"

namespace hpam::am {

// The timeout walk: checks_per_poll descriptors, one step each (inline:
// most steps find the descriptor idle and cost a load and a branch).
template <class Card>
void endpoint<Card>::check_timeouts(bool reading) {
  uint32_t k = checks_per_poll_;
  do {
    timeout_cursor_ = next_timeout_index(timeout_cursor_);
    request_desc& d = requests_.at_index(timeout_cursor_);
    if (__builtin_expect(d.busy, 0)) check_timeout(d, timeout_cursor_, reading);
  } while (__builtin_expect(--k != 0, 0));
}

// The walk's next flat [peer][instance] index after i, over my own row.
template <class Card>
uint32_t endpoint<Card>::next_timeout_index(uint32_t i) const {
  if (++i == timeout_end_) i = 0;
  if (i == my_row_) i += depth_;
  return i == timeout_end_ ? 0 : i;
}

// A request sent since the walk last passed is stamped on this first look:
// its timeout runs from here, at most one walk round (checks_per_poll
// descriptors a poll, over every [peer][instance]) after the send, never
// before it, so it never times out early. The peer's heartbeat is not
// read here (a line the peer writes at each poll): resend_premature takes
// it at the first timeout.
// index: d's flat [peer][instance] index.
template <class Card>
void endpoint<Card>::check_timeout(request_desc& d, uint32_t index, bool reading) {
  const uint64_t now = clock_.now_ns();
  if (__builtin_expect(!d.stamped, 0)) {
    d.timestamp = d.first_sent = now;
    d.timeout = timeout_ns_;
    d.stamped = true;
    d.waited_arrivals = false;
    d.beat_known = false;
    return;
  }
  if (__builtin_expect(now - d.timestamp >= d.timeout, 0))
    on_timeout(static_cast<int>(index / depth_), d, now, reading);
}

template <class Card>
status endpoint<Card>::resend_due() {
  if (state_ != handler_state::none) return rule_broken("resend_due called from a handler");
  acks_.flush_all(ack_launcher());
  card_.send_due();
  check_timeouts(false);
  return status::ok;
}

template <class Card>
uint32_t endpoint<Card>::resend_idle(uint32_t& mark) {
  if (state_ != handler_state::none || polls_ != mark) {
    mark = polls_;
    return 0;
  }
  acks_.flush_all(ack_launcher());
  card_.send_due();
  uint32_t resent = 0;
  for (uint32_t i = 0; i < timeout_end_; ++i) {
    if (i == my_row_) {
      i += depth_ - 1;
      continue;
    }
    request_desc& d = requests_.at_index(i);
    if (!d.busy) continue;
    const int peer = static_cast<int>(i / depth_);
    const uint64_t before = counters_[peer].retransmissions;
    check_timeout(d, i, false);
    if (counters_[peer].retransmissions != before) {
      counters_[peer].background_resends++;
      ++resent;
    }
  }
  return resent;
}

// Resend with doubled timeout. Past the give-up time, look at the peer: give
// up when its process is gone or stopped, or when it polls but never
// answers; a peer that lives and does not poll is busy, not dead: keep
// resending, looking again every recheck_ns at most. The next look falls on
// the give-up instant itself. A timeout resends only when the request may
// be lost: not while the peer cannot have read it (resend_premature) or
// its answer may wait unread in my card (answer_may_wait).
template <class Card>
void endpoint<Card>::on_timeout(int peer, request_desc& d, uint64_t now, bool reading) {
  if (d.suspected) {  // loss recovery took it for lost: not a timeout
    resend_suspected(peer, d, now);
    return;
  }
  counters_[peer].timeouts++;
  if (!d.timed_out) {  // the first timeout: count the peer's polls from here
    d.timed_out = true;
    d.peer_beat = card_.peer_heartbeat(peer);
    d.peer_drained = false;
  }
  const uint64_t silent = now - d.first_sent;
  if (silent >= give_up_ns_) {
    const silence why = observe(peer, d);
    if (why != silence::busy) {
      give_up(peer, silent, why, card_.peer_heartbeat(peer) - d.peer_beat);
      return;
    }
    counters_[peer].busy_peer_waits++;
  }
  if (resend_premature(peer, d, now) || answer_may_wait(d, reading)) {
    defer_resend(peer, d, now);
    return;
  }
  resend(peer, d, now);
  if (d.retries < backoff_limit_) d.timeout *= 2;  // exponential backoff
  if (d.retries < 255) d.retries++;
  d.timeout = std::min(d.timeout, silent < give_up_ns_ ? give_up_ns_ - silent : recheck_ns_);
  if (adaptive_timeout_) timers_[peer].rtt.timed_out(timeout_ns_);
}

// A peer that announced it has finished will not answer again; then the
// kernel's view of the peer's process. A live one is ignoring me only when
// its card heartbeat shows it polled often enough since this request first
// timed out to have handled everything in its inbound queue, and I then
// polled often enough to have read its answer from mine (I may myself have
// been computing while the answer waited).
template <class Card>
silence endpoint<Card>::observe(int peer, request_desc& d) {
  // Finished, unless what it sent before it finished still waits in my card.
  if (card_.peer_done(peer)) return card_.arrival_pending() ? silence::busy : silence::finished;
  switch (card_.peer_process(peer)) {
    case sys::process_state::gone:
      return silence::gone;
    case sys::process_state::stopped:
      return silence::stopped;
    case sys::process_state::running:
      break;
  }
  const uint32_t peer_polls = card_.peer_heartbeat(peer) - d.peer_beat;  // modulo 2^32
  if (peer_polls < polls_to_drain_) return silence::busy;
  if (!d.peer_drained) {
    d.peer_drained = true;
    d.own_polls = polls_;
    return silence::busy;
  }
  return polls_ - d.own_polls >= polls_to_drain_ ? silence::ignoring : silence::busy;
}

template <class Card>
void endpoint<Card>::give_up(int peer, uint64_t silent_ns, silence why, uint32_t beats) {
  lost_[peer] = 1;
  sendable_[peer] = 0;
  for (uint32_t i = 0; i < depth_; ++i) requests_.at(peer, i).busy = false;
  if (unreachable_peer_ < 0) unreachable_peer_ = peer;
  newly_unreachable_ = true;
  const std::string heartbeat =
      beats == 0 ? "its card heartbeat stopped"
                 : "its card heartbeat advanced " + std::to_string(beats) + " times meanwhile";
  const char* what = why == silence::gone       ? "its process has exited"
                     : why == silence::finished ? "it has finished (closed its card)"
                     : why == silence::stopped  ? "its process is stopped (SIGSTOP or a debugger)"
                                                : "it is alive and polling but never answered: it "
                                                  "rejects or never receives my packets (wrong "
                                                  "protection key, or every packet lost)";
  last_error_ = "hpam: process " + std::to_string(peer) + " of job " + job_ +
                " is unreachable: no reply for " + std::to_string(silent_ns / 1'000'000) +
                " ms (give-up time " + std::to_string(give_up_ns_ / 1'000'000) + " ms) while " +
                heartbeat + "; " + what;
}

// A resend: the packet in the request's block goes out again, marked
// resent (its wire header, CRC included, is written again at launch).
template <class Card>
void endpoint<Card>::resend(int peer, request_desc& d, uint64_t now) {
  header_of(card_.tx_block(d.block))->refusal |= resent;
  card_.relaunch(peer, d.block, d.length);
  d.timestamp = now;
  d.resent = true;
  d.waited_arrivals = false;
  d.sent_beat = card_.peer_heartbeat(peer);
  d.beat_known = true;
  counters_[peer].retransmissions++;
}

// A timed-out request is not sent again, and its timer starts again,
// while its peer cannot have read it: on a busy or oversubscribed machine
// a timeout alone is no sign of loss, for the peer may be descheduled,
// computing, or working through a queue my request waits in, and a resend
// only adds a duplicate for it to answer. The peer's polls since the send
// (its card heartbeat) that let a timeout resend:
// * its whole inbound pool (the liveness rule's polls_to_drain_: it has
//   read everything sent to it before), on a wire that cannot lose (where
//   every resend is in vain), and on a lossy one while the request is
//   younger than the fixed timeout (timeout_ns_, the paper's timer and the
//   adaptive one's ceiling): the adaptive timer resends no sooner than the
//   paper's unless the peer has read its queue;
// * past that, on a lossy wire, ack_hold_polls + 2: a
//   poll begun after the send (the peer runs), and the polls in which an
//   ack it deferred has left (deferred_acks.hpp). The whole pool there
//   delayed each loss at a busy peer by as many polls: beside CPU burners
//   Open MPI yields the processor in each idle progress call
//   (oversubscribed: mpi_yield_when_idle) and 463 polls took 0.5-0.8 s
//   (bench/mpi_flood, 8 ranks, the fault mix, 3 burners: over 30 s for
//   5,000 messages each way instead of about 1 s). Two polls, not
//   eighteen, resent 5-7 % of a 2-rank flood in vain beside a burner,
//   against 0.9-3 % (three alternating rounds each).
// The heartbeat at the send is known when the wire can lose packets
// (stamp_sent) and after a resend; for a request the walk stamped (a clean
// wire) the peer's polls count from its first timeout. A peer that never
// polls again is still given up on by its process state (observe). With
// adaptive_timeout off (the paper's fixed timer) a timeout always resends.
template <class Card>
bool endpoint<Card>::resend_premature(int peer, request_desc& d, uint64_t now) {
  if (!defer_premature_) return false;
  const uint32_t beat = card_.peer_heartbeat(peer);
  if (!d.beat_known) {
    d.sent_beat = beat;
    d.beat_known = true;
    return true;
  }
  const bool young = !lossy_ || (d.retries == 0 && now - d.first_sent < timeout_ns_);
  return beat - d.sent_beat < (young ? young_polls_ : ack_hold_polls + 2);
}

// Whether the answer to d may wait unread in my own card (I was
// descheduled or computing, or take receive_budget_ packets a poll): a
// timeout that finds packets waiting is not acted on until I have polled
// polls_to_drain_ times since (the liveness rule's count, from my side),
// enough to read everything that waited then, or nothing waits any more.
// On every wire: a sender descheduled past its timeout otherwise resends
// every request whose answer sits unread in its card. A walk that does not
// read (resend_due, resend_idle: the owner is away) waits one timeout,
// once.
template <class Card>
bool endpoint<Card>::answer_may_wait(request_desc& d, bool reading) {
  if (!d.waited_arrivals) {
    if (!card_.arrival_pending()) return false;
    d.waited_arrivals = true;
    d.read_mark = polls_;
    return true;
  }
  return reading && polls_ - d.read_mark < polls_to_drain_ && card_.arrival_pending();
}

// A timeout that resends nothing: d's timer runs again from `from`.
template <class Card>
void endpoint<Card>::defer_resend(int peer, request_desc& d, uint64_t from) {
  d.timestamp = from;
  counters_[peer].resends_deferred++;
}

}  // namespace hpam::am
