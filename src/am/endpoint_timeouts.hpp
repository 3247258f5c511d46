// The timeout walk's work and the loss recovery on top of it, for
// endpoint<Card>: the sending half of a poll (resend_due, and resend_idle
// for a background thread), HPAM's timeout with exponential backoff and
// give-up (HPAM 5.2.1, appendix B), and, when the wire can lose packets,
// the adaptive timeout (am/rtt_estimator.hpp), early resends of ordered
// requests and the detection of spurious resends (packet.hpp: resent).
#pragma once

#include <algorithm>
#include <string>

#include "am/endpoint.hpp"

namespace hpam::am {

template <class Card>
status endpoint<Card>::resend_due() {
  if (state_ != handler_state::none) return rule_broken("resend_due called from a handler");
  if (!acks_.empty()) flush_acks(true);
  card_.send_due();
  check_timeouts();
  return status::ok;
}

template <class Card>
uint32_t endpoint<Card>::resend_idle(uint32_t& mark) {
  if (state_ != handler_state::none || polls_ != mark) {
    mark = polls_;
    return 0;
  }
  if (!acks_.empty()) flush_acks(true);
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
    check_timeout(d, i);
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
// the give-up instant itself.
template <class Card>
void endpoint<Card>::on_timeout(int peer, request_desc& d, uint64_t now) {
  counters_[peer].timeouts++;
  if (d.retries == 0) {  // the first timeout: count the peer's polls from here
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
  if (adaptive_timeout_ && now - timers_[peer].answered_at < d.timeout) {
    // The peer answers my other requests: as TCP restarts its timer on
    // each acknowledgement of new data (RFC 6298 5.3), this one's runs from
    // the last answer (a loss among answered ones is resent early).
    defer_resend(peer, d, std::max(d.timestamp, timers_[peer].answered_at));
    return;
  }
  if (resend_premature(peer, d)) {
    defer_resend(peer, d, now);
    return;
  }
  if (adaptive_timeout_ && !d.waited_arrivals && card_.arrival_pending()) {
    // Its answer may wait in my own card (I was away, or take a packet a
    // poll): once, a timeout more for it to be read.
    d.waited_arrivals = true;
    defer_resend(peer, d, now);
    return;
  }
  d.waited_arrivals = false;
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
  if (card_.peer_done(peer)) return silence::finished;
  switch (card_.peer_process(peer)) {
    case sys::process_state::gone: return silence::gone;
    case sys::process_state::stopped: return silence::stopped;
    case sys::process_state::running: break;
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
  for (uint32_t i = 0; i < depth_; ++i) requests_.at(peer, i).busy = false;
  if (unreachable_peer_ < 0) unreachable_peer_ = peer;
  newly_unreachable_ = true;
  const std::string heartbeat = beats == 0 ? "its card heartbeat stopped"
                                           : "its card heartbeat advanced " +
                                                 std::to_string(beats) + " times meanwhile";
  const char* what = why == silence::gone    ? "its process has exited"
                     : why == silence::finished ? "it has finished (closed its card)"
                     : why == silence::stopped ? "its process is stopped (SIGSTOP or a debugger)"
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
  d.sent_beat = card_.peer_heartbeat(peer);
  counters_[peer].retransmissions++;
}

// An answer to my request d, when the wire can lose packets. A request
// answered from its first copy though it was resent: the resend was
// spurious. One never resent was timed from its send (Karn's rule: a
// resent one says nothing of the round trip). Ordered requests answered
// out of turn tell of an earlier one lost (resend_early).
template <class Card>
void endpoint<Card>::on_answer_when_lossy(int src, request_desc& d, uint32_t instance,
                                          bool answers_resend) {
  const uint64_t now = clock_.now_ns();
  peer_timer& t = timers_[src];
  t.answered_at = now;
  if (d.resent) {
    if (!answers_resend) counters_[src].spurious_resends++;
  } else if (adaptive_timeout_ && d.stamped && now > d.first_sent) {
    t.rtt.measured(now - d.first_sent, timeout_min_ns_, timeout_ns_);
  }
  if (!early_resend_) return;
  const uint64_t launch = launch_of(instance, d.sequence);
  if (!answer_batch_.open) {
    resend_early(src, launch);
    return;
  }
  // Every answered request is at or after the oldest unanswered one.
  auto ahead = [this, &t](uint64_t l) { return (l + launch_span_ - t.oldest) % launch_span_; };
  if (!answer_batch_.answered || ahead(launch) > ahead(answer_batch_.farthest))
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
  peer_timer& t = timers_[src];
  const uint32_t next = instance_hint_[src];  // the instance the next request takes
  const uint64_t sent = launch_of(next, next_sequence(requests_.at(src, next).sequence));
  auto distance = [this](uint64_t from, uint64_t to) { return (to + launch_span_ - from) % launch_span_; };
  auto busy_at = [this, src](uint64_t l) -> request_desc* {  // the request launched as l, if unanswered
    const uint32_t i = static_cast<uint32_t>(l % depth_);
    request_desc& o = requests_.at(src, i);
    return o.busy && launch_of(i, o.sequence) == l ? &o : nullptr;
  };
  while (t.oldest != sent && (t.oldest == launch || !busy_at(t.oldest)))
    t.oldest = (t.oldest + 1) % launch_span_;
  const uint64_t in_flight = distance(t.oldest, sent);
  if (distance(t.oldest, t.highest) >= in_flight) t.highest = t.oldest;  // passed: none above
  if (distance(t.oldest, launch) < in_flight && distance(t.oldest, launch) > distance(t.oldest, t.highest))
    t.highest = launch;
  const uint64_t span = distance(t.oldest, t.highest);
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
    if (o == nullptr || o->resent || !o->stamped) continue;  // once each; the timeout after that
    resend(src, *o, clock_.now_ns());
    counters_[src].early_resends++;
  }
}

}  // namespace hpam::am
