// Loss recovery for endpoint<Card>, on only when the wire can lose packets
// (can_lose, am/config.hpp), after TCP (src/am/README.md, "Loss recovery"):
// requests stamped as they are sent with their peer's adaptive timeout
// (am/rtt_estimator.hpp: RFC 6298, Karn's rule), spurious resends detected
// from the resent / answers_resend flags (packet.hpp), and early resends of
// ordered requests once later ones are answered (fast retransmit, then
// SACK-style recovery). The timeout walk it refines is in
// endpoint_timeouts.hpp.
#pragma once

#include "am/endpoint.hpp"

namespace hpam::am {

// Early resend (endpoint_config::early_resend): an ordered request is taken
// for lost, and resent before its timeout, once a request sent this many
// after it to the same peer has been answered (TCP's fast retransmit waits
// for three duplicate acknowledgements; the wire's reorder fault holds a
// packet back behind one other).
constexpr uint32_t early_resend_after = 3;

// Loss recovery, only when the wire can lose packets (lossy_): requests
// are stamped as they are sent, with their peer's adaptive timeout.
// The peer's heartbeat goes with it, read again at most every quarter
// of a timeout (a line the peer writes at each poll: a miss to read).
template <class Card>
void endpoint<Card>::stamp_sent(int dest, request_desc& d) {
  const uint64_t now = clock_.now_ns();
  peer_timer& t = timers_[dest];
  d.timestamp = d.first_sent = now;
  d.stamped = true;
  d.timeout = t.rtt.rto_ns;
  d.waited_arrivals = false;
  d.suspected = false;
  d.beat_known = true;
  if (t.beat_at == 0 || now - t.beat_at >= t.rtt.rto_ns / 4) {
    t.beat = card_.peer_heartbeat(dest);
    t.beat_at = now;
  }
  d.sent_beat = t.beat;
}

// Ordered: the place of instance's current request in the launch order
// to a peer (request n takes instance n mod D, sequence n / D + 1),
// modulo launch_span_.
template <class Card>
uint64_t endpoint<Card>::launch_of(uint32_t instance, uint32_t sequence) const {
  return (static_cast<uint64_t>(previous_sequence(sequence)) * depth_ + instance) % launch_span_;
}

// An answer to my request d, when the wire can lose packets. One answered
// from its first copy is timed from its send. Karn's rule keeps resent
// requests out of the round trip, for an answer cannot say which copy it
// answers; here the answers_resend flag says so (as TCP's Eifel detection
// does with timestamps, RFC 3522), so a resent request answered from its
// first copy is a measurement like any other, and its resend was spurious:
// counted, and the timeout it feeds grows past the delay that fooled it.
// Ordered requests answered out of turn tell of an earlier one lost
// (resend_early).
template <class Card>
void endpoint<Card>::on_answer_when_lossy(int src, request_desc& d, uint32_t instance,
                                          bool answers_resend) {
  const uint64_t now = clock_.now_ns();
  peer_timer& t = timers_[src];
  if (d.resent && !answers_resend) counters_[src].spurious_resends++;
  if (d.suspected) {  // taken for lost, but answered before it was resent
    d.suspected = false;
    t.suspects--;
  }
  if (adaptive_timeout_ && !answers_resend && d.stamped && now > d.first_sent)
    t.rtt.measured(now - d.first_sent, timeout_min_ns_, timeout_ns_);
  if (!early_resend_) return;
  const uint64_t launch = launch_of(instance, d.sequence);
  if (!answer_batch_.open) {
    resend_early(src, launch);
    return;
  }
  // Every answered request is at or after the oldest unanswered one.
  if (!answer_batch_.answered ||
      launches_between(t.oldest, launch) > launches_between(t.oldest, answer_batch_.farthest))
    answer_batch_.farthest = launch;
  answer_batch_.answered = true;
}

template <class Card>
void endpoint<Card>::close_answer_batch(int src) {
  answer_batch_.open = false;
  if (!answer_batch_.answered) return;
  answer_batch_.answered = false;
  resend_early(src, answer_batch_.farthest);
}

// Ordered: request n to a peer went on instance n mod D with sequence
// n / D + 1, so the launch order is known from (instance, sequence), and
// the oldest request that may be unanswered is timers_[src].oldest. Called
// before the answered request is freed, so it still counts as busy here.
// As TCP with selective acknowledgements takes a hole for lost once
// DupThresh segments above it are acknowledged (RFC 6675), the oldest is
// taken for lost once early_resend_after requests launched after it are
// answered (a packet the wire held back behind others passes at most one
// each way, so two answers can overtake it), and the peer's requests are in
// recovery: every hole below the highest answered request, early_resend_after
// or more launches below it, is resent (a lost ack packet may have carried
// many). Recovery ends when no request is unanswered below the highest
// answered.
template <class Card>
void endpoint<Card>::resend_early(int src, uint64_t launch) {
  take_holes_for_lost(src, launch);
  if (timers_[src].suspects != 0 && !card_.arrival_pending()) resend_suspects(src);
}

template <class Card>
void endpoint<Card>::take_holes_for_lost(int src, uint64_t launch) {
  peer_timer& t = timers_[src];
  const uint32_t next = instance_hint_[src];  // the instance the next request takes
  const uint64_t sent = launch_of(next, next_sequence(requests_.at(src, next).sequence));
  auto busy_at = [this,
                  src](uint64_t l) -> request_desc* {  // the request launched as l, if unanswered
    const uint32_t i = static_cast<uint32_t>(l % depth_);
    request_desc& o = requests_.at(src, i);
    return o.busy && launch_of(i, o.sequence) == l ? &o : nullptr;
  };
  while (t.oldest != sent && (t.oldest == launch || !busy_at(t.oldest)))
    t.oldest = (t.oldest + 1) % launch_span_;
  const uint64_t in_flight = launches_between(t.oldest, sent);
  if (launches_between(t.oldest, t.highest) >= in_flight)
    t.highest = t.oldest;  // passed: none above
  if (launches_between(t.oldest, launch) < in_flight &&
      launches_between(t.oldest, launch) > launches_between(t.oldest, t.highest))
    t.highest = launch;
  const uint64_t span = launches_between(t.oldest, t.highest);
  if (span < early_resend_after) {
    t.recovering = false;
    return;
  }
  if (!t.recovering) {
    uint64_t answered_above = 0;  // launched after the oldest and answered (launch: about to be)
    for (uint64_t k = 1; k <= span; ++k) {
      const uint64_t l = (t.oldest + k) % launch_span_;
      answered_above += l == launch || !busy_at(l);
    }
    if (answered_above < early_resend_after) return;
    t.recovering = true;
  }
  for (uint64_t k = 0; k + early_resend_after <= span; ++k) {
    request_desc* o = busy_at((t.oldest + k) % launch_span_);
    if (o == nullptr || o->resent || o->suspected || !o->stamped) continue;  // once each
    o->suspected = true;
    o->timestamp = clock_.now_ns() - o->timeout;  // due now (modulo 2^64), its timeout kept
    t.suspects++;
  }
}

// Requests taken for lost are resent once no packet waits in my card: an
// ack packet the wire held back behind the next one comes right after it,
// and is read before the loss its absence suggested is acted on, as TCP's
// RACK waits a reordering window before it marks a packet lost (RFC 8985,
// 6.2). Each later answer from the peer looks again (resend_early); the
// timeout walk is the backstop (resend_suspected), for a peer that sends
// nothing more.
template <class Card>
void endpoint<Card>::resend_suspects(int src) {
  const uint64_t now = clock_.now_ns();
  for (uint32_t i = 0; i < depth_ && timers_[src].suspects != 0; ++i) {
    request_desc& o = requests_.at(src, i);
    if (o.busy && o.suspected) resend_lost(src, o, now);
  }
}

// A request taken for lost and still unanswered, found due by the walk:
// once more a walk round later while packets wait in my card (RACK's
// reordering window: a packet held back comes right behind the one that
// passed it). Not the whole queue, as a timeout waits (answer_may_wait):
// this loss has evidence (later answers), and at a busy receiver the whole
// queue delays every early resend (in alternating runs of a 4-rank flood
// under the fault mix: 0.78-1.17 s against 0.83-1.34 s waiting for it).
template <class Card>
void endpoint<Card>::resend_suspected(int peer, request_desc& d, uint64_t now) {
  if (!answer_may_wait(d, false)) resend_lost(peer, d, now);  // else still due
}

// A request taken for lost goes out again with the timeout it had.
template <class Card>
void endpoint<Card>::resend_lost(int peer, request_desc& d, uint64_t now) {
  d.suspected = false;
  timers_[peer].suspects--;
  resend(peer, d, now);
  counters_[peer].early_resends++;
}

}  // namespace hpam::am
