// Everything an endpoint is built from. The defaults below are the only
// ones: the knob table (src/capi/knobs.cpp) reads them for the C API and every
// front end, and validates user values against the knobs' ranges before an
// endpoint is built. The endpoint itself checks only what its own code
// relies on (setup_problem).
#pragma once

#include <cstdint>
#include <string>

#include "nic/card.hpp"
#include "sys/clock.hpp"

namespace hpam::am {

struct endpoint_config {
  nic::card_setup card;                  // job, nprocs, my_proc, block size, CRC, faults
  uint32_t depth = 4;                    // D, request instances per peer (Medusa: 4)
  uint32_t rx_blocks = 0;                // inbound blocks; 0 = default_rx_blocks: 2*(P-1)*(D+1)
  uint64_t timeout_ns = 1'000'000;       // first retransmission timeout; adaptive: its ceiling
  bool adaptive_timeout = true;          // when the wire can lose packets, the timeout follows each
                                         // peer's measured round trip (am/rtt_estimator.hpp); on
                                         // every wire, a timeout resends only to a peer that has
                                         // polled since the send (endpoint::resend_premature)
  uint64_t timeout_min_ns = 50'000;      // adaptive: the floor of the timeout (at most timeout_ns)
  bool early_resend = true;              // ordered, when the wire can lose packets: a request whose
                                         // early_resend_after successors were answered is resent
  uint32_t backoff_limit = 10;           // the timeout doubles at most this many times
  uint64_t give_up_ns = 30'000'000'000;  // HPAM gives up on a peer after 30 s
  uint32_t checks_per_poll = 1;          // K: request descriptors checked per poll
  uint32_t receive_budget = 1;           // most packets one poll handles (1: back to the caller
                                         // after each, keeping acks off the critical path)
  bool key_check = true;                 // check the job key on every arrival
  bool defer_acks = true;            // launch empty acks after the next send or poll, not at once
  bool piggyback_acks = true;        // a deferred ack rides on the next request to its peer
                                     // (an 8-byte trailer) instead of a packet of its own
  bool multi_ack = true;             // deferred plain acks to one peer go out together in one
                                     // ack packet, gathered while a stream arrives (endpoint.hpp)
  bool acks_wait_when_idle = false;  // the processes outnumber the cores: a poll that finds
                                     // nothing leaves deferred acks waiting for a ride (at
                                     // most ack_hold_polls polls, deferred_acks.hpp) instead
                                     // of launching them
  bool ordered = false;        // requests to a peer take its D instances in turn (see endpoint.hpp)
  bool by_reference = true;    // Medusa and Hamlyn: a long packet on a clean wire is read in
                               // its sender's block (nic::card_setup::deliver_by_reference)
  bool headless_cells = true;  // Medusa: a packet in its RX_READY cell on a clean wire leaves
                               // its wire header out (nic::card_setup::headless_cells);
                               // Hamlyn: every packet on a clean wire leaves it unwritten
  uint64_t key = 0;            // job protection key; 0 = process 0 draws a random one and
                               // publishes it in its card for the others to read
  sys::manual_time* manual_time = nullptr;  // tests: time source set by hand
};

// What the protocol's own code relies on (identity of the process, an
// encodable depth, non-zero times): empty when it holds, else one line.
// User-facing ranges are the knob table's.
std::string setup_problem(const endpoint_config& cfg);

// The worst-case inbound pool: all P-1 peers' D requests plus replies to my
// own D requests to each of them (HPAM 5.2.1).
constexpr uint32_t worst_case_rx_blocks(int nprocs, uint32_t depth) {
  return 2u * static_cast<uint32_t>(nprocs > 1 ? nprocs - 1 : 1) * depth;
}

// The pool an endpoint takes when rx_blocks is 0: the worst case plus two
// blocks per peer. The protocol may launch a new request (or reply) as soon
// as the answer to an old one arrives, which can be before the receiver has
// given back the block the old one came in (one per direction); without the
// two, a Hamlyn sender's first launch could wait in its backlog for room at
// the receiver, and only the sender's next poll would send it.
constexpr uint32_t default_rx_blocks(int nprocs, uint32_t depth) {
  return worst_case_rx_blocks(nprocs, depth) +
         2u * static_cast<uint32_t>(nprocs > 1 ? nprocs - 1 : 1);
}

// The inbound pool an endpoint's card gets: rx_blocks, or the default.
constexpr uint32_t inbound_pool(const endpoint_config& cfg) {
  return cfg.rx_blocks ? cfg.rx_blocks : default_rx_blocks(cfg.card.nprocs, cfg.depth);
}

// Whether a packet can fail to arrive, or arrive only after a later one of
// its sender, unless its sender's card sends it again: the wire drops,
// corrupts, reorders or delays, or the inbound pool is below its default
// (an overflow drops; a Hamlyn sender's launch may wait in its backlog).
// Only then do timeouts matter, and the loss recovery on top of HPAM's
// timeout walk (the adaptive timeout, early resends, background resends)
// is switched on; without it nothing of it runs.
inline bool can_lose(const endpoint_config& cfg) {
  const nic::fault_config& f = cfg.card.faults;
  return f.drop > 0 || f.corrupt > 0 || f.reorder > 0 || f.delay > 0 ||
         (cfg.rx_blocks != 0 && cfg.rx_blocks < default_rx_blocks(cfg.card.nprocs, cfg.depth));
}

}  // namespace hpam::am
