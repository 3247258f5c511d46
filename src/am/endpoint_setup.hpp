// Setup and finalize of endpoint<Card>: the descriptor table [peer][instance]
// with a VRAM block for every request and reply descriptor (HPAM 5.2.2,
// Figure 4), the job's protection key (5.3), connecting to peers, the
// handler table (4), the segment peers store into and get from (GAM), and
// draining at finalize (the liveness rule: docs/DESIGN.md).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "am/endpoint.hpp"
#include "sys/protection_key.hpp"

namespace hpam::am {

namespace detail {
// The job key: the caller's, or one process 0 draws from the kernel's random
// source and publishes in its card's setup region (0 here: read it there).
inline uint64_t initial_key(const endpoint_config& cfg) {
  if (cfg.key) return cfg.key;
  return cfg.card.my_proc == 0 ? sys::random_protection_key() : 0;
}
// `publish`: the job key my card publishes for the others (0: none).
inline nic::card_setup card_setup_for(const endpoint_config& cfg, sys::clock* clk,
                                      uint64_t publish = 0) {
  nic::card_setup s = cfg.card;
  s.job_key = publish;
  const uint32_t per_direction = static_cast<uint32_t>(s.nprocs - 1) * cfg.depth;
  s.tx_blocks = 2 * per_direction;  // D request + D reply buffers per peer
  s.rx_blocks = inbound_pool(cfg);
  s.clock = clk;
  // A block is written again only once its packet was taken: a request's
  // once answered (an answer is made after the packet was read), a reply's
  // or an ack's once the next request on its instance came (its requester
  // took the answer first); every further copy goes by relaunch.
  s.deliver_by_reference = cfg.by_reference;
  // The protocol reads a packet's source and length from the card
  // (rx_packet), never from its wire header.
  s.headless_cells = cfg.headless_cells;
  return s;
}
inline const endpoint_config& validated(const endpoint_config& cfg) {
  const std::string err = setup_problem(cfg);
  if (!err.empty()) throw std::invalid_argument("hpam: " + err);
  return cfg;
}
}  // namespace detail

template <class Card>
endpoint<Card>::endpoint(const endpoint_config& cfg)
    : job_(detail::validated(cfg).card.job),
      nprocs_(cfg.card.nprocs),
      my_proc_(cfg.card.my_proc),
      depth_(cfg.depth),
      key_(detail::initial_key(cfg)),
      key_check_(cfg.key_check),
      timeout_ns_(cfg.timeout_ns),
      backoff_limit_(cfg.backoff_limit),
      give_up_ns_(cfg.give_up_ns),
      recheck_ns_(std::min<uint64_t>(cfg.give_up_ns, liveness_recheck_ns)),
      // A live peer's inbound queue holds at most its whole pool: polling
      // that many times it has handled everything sent to it.
      polls_to_drain_(inbound_pool(cfg) + 1),
      young_polls_(std::max(polls_to_drain_, ack_hold_polls + 2)),  // resend_premature
      checks_per_poll_(cfg.checks_per_poll),
      receive_budget_(cfg.receive_budget),
      lone_budget_(can_lose(cfg) ? cfg.receive_budget : 1),
      ordered_(cfg.ordered),
      lossy_(can_lose(cfg)),
      stamp_at_send_(lossy_ || cfg.manual_time != nullptr),
      adaptive_timeout_(lossy_ && cfg.adaptive_timeout),
      defer_premature_(cfg.adaptive_timeout),
      early_resend_(lossy_ && cfg.ordered && cfg.early_resend),
      answer_more_(lossy_),
      timeout_min_ns_(std::min(cfg.timeout_min_ns, cfg.timeout_ns)),
      launch_span_((uint64_t{1} << control_bits::sequence_bits) * cfg.depth),
      clock_(cfg.manual_time ? sys::clock(cfg.manual_time) : sys::clock()),
      card_(detail::card_setup_for(cfg, &clock_, cfg.key ? 0 : key_)),
      acks_(cfg) {
  if (key_ == 0) key_ = key_of_process_0();
  requests_.resize(nprocs_, depth_);
  replies_.resize(nprocs_, depth_);
  for (int p = 0; p < nprocs_; ++p) {
    if (p == my_proc_) continue;
    for (uint32_t i = 0; i < depth_; ++i)
      if (!card_.claim_tx_block(requests_.at(p, i).block) ||
          !card_.claim_tx_block(replies_.at(p, i).block))
        throw std::runtime_error(
            "hpam: card has too few outbound blocks for 2*(P-1)*D descriptors");
  }
  instance_hint_.assign(nprocs_, 0);
  connected_.assign(nprocs_, 0);
  connected_[my_proc_] = 1;
  lost_.assign(nprocs_, 0);
  sendable_.assign(nprocs_, 0);
  counters_.assign(nprocs_, protocol_counters{});
  self_buffer_.resize(card_.block_size());
  peer_timer fresh;
  fresh.rtt = rtt_estimator::starting(timeout_ns_);
  timers_.assign(nprocs_, fresh);
  timeout_end_ = static_cast<uint32_t>(nprocs_) * depth_;
  my_row_ = static_cast<uint32_t>(my_proc_) * depth_;
  timeout_cursor_ = my_row_ + depth_ - 1;  // the walk starts with the row after mine
}

// The key process 0 published (it waits, like an attach, for process 0's card).
template <class Card>
uint64_t endpoint<Card>::key_of_process_0() {
  const uint64_t key = card_.published_key(0);
  if (key == 0)
    throw std::runtime_error("hpam: process 0 of job " + job_ +
                             " publishes no job key (it was given one): give every process of "
                             "the job the same key, or none");
  return key;
}

template <class Card>
void endpoint<Card>::connect(int proc) {
  if (proc < 0 || proc >= nprocs_)
    throw std::invalid_argument("hpam: connect to process " + std::to_string(proc) +
                                ": valid range is [0, " + std::to_string(nprocs_ - 1) + "]");
  if (connected_[proc]) return;
  card_.attach_peer(proc);
  connected_[proc] = 1;
  sendable_[proc] = !lost_[proc];  // never mine: connected_ is set for me at setup
}

template <class Card>
void endpoint<Card>::connect_all() {
  for (int p = 0; p < nprocs_; ++p) connect(p);
}

template <class Card>
status endpoint<Card>::register_handler4(unsigned index, handler4_fn fn, void* ctx) {
  if (index >= max_handlers) return status::invalid_argument;
  handlers_[index].short4 = fn;
  handlers_[index].ctx = ctx;
  return status::ok;
}

template <class Card>
status endpoint<Card>::register_handler_bulk(unsigned index, handler_bulk_fn fn, void* ctx) {
  if (index >= max_handlers) return status::invalid_argument;
  handlers_[index].bulk = fn;
  handlers_[index].ctx = ctx;
  return status::ok;
}

template <class Card>
status endpoint<Card>::set_segment(void* base, size_t len) {
  const auto b = reinterpret_cast<uint64_t>(base);
  if (len != 0 && (base == nullptr || b + len < b)) return status::invalid_argument;
  segment_base_ = len ? b : 0;
  segment_len_ = len;
  return status::ok;
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
  // The answers still deferred leave before the announcement: a peer that
  // sees me finished with its request unanswered gives up on me.
  acks_.flush_all(ack_launcher());
  card_.announce_done();
  // Real time on purpose, not clock_: finalize must end even in a test that
  // drives the protocol by a manual clock and never advances it.
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

template <class Card>
bool endpoint<Card>::in_segment(uint64_t address, uint64_t len) const {
  return segment_len_ != 0 && address >= segment_base_ && len <= segment_len_ &&
         address - segment_base_ <= segment_len_ - len;
}

}  // namespace hpam::am
