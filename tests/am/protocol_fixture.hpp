// Endpoints of one job living in one test process (each with its own card
// segment), driven by polling them in turn; and the card types every
// protocol test runs over.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "../common/test_util.hpp"
#include "am/endpoint.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"
#include "nic/medusa/medusa_card.hpp"

namespace hpam::test {

using card_types = ::testing::Types<nic::medusa_card, nic::hamlyn_am_card>;

struct job_options {
  int nprocs = 2;
  uint32_t depth = 4;
  uint32_t block_size = 8192;
  uint32_t rx_blocks = 0;
  uint64_t timeout_ns = 1'000'000;
  uint64_t give_up_ns = 30'000'000'000ull;
  uint32_t receive_budget = 64;
  uint32_t checks_per_poll = 1;
  nic::fault_config faults;  // applied to every card
  bool manual_clock = true;
  bool defer_acks = false;
  bool piggyback_acks = true;
  bool multi_ack = true;             // (with defer_acks)
  bool acks_wait_when_idle = false;  // (with defer_acks)
  bool ordered = false;
  bool adaptive_timeout = true;  // off: the paper's fixed timer (every timeout resends)
  bool early_resend = true;      // (ordered, when the wire can lose packets)
  bool by_reference = true;      // Medusa: long packets read in the sender's block
  bool headless_cells = true;    // Medusa: packets in their cells without a wire header
  // The CRC as the C API sets it (to_endpoint_config): only on a wire that
  // can corrupt, so a clean wire's Medusa packets travel headless.
  bool crc_only_when_corrupting = true;
};

template <class Card>
class local_job {
 public:
  using ep = am::endpoint<Card>;
  explicit local_job(const job_options& o, const char* tag = "am") : job_(unique_job(tag)) {
    for (int p = 0; p < o.nprocs; ++p) eps_.push_back(std::make_unique<ep>(config(o, p)));
    for (auto& e : eps_) e->connect_all();
  }
  am::endpoint_config config(const job_options& o, int p) {
    am::endpoint_config c;
    c.card.job = job_;
    c.card.nprocs = o.nprocs;
    c.card.my_proc = p;
    c.card.faults = o.faults;
    c.card.faults.seed = o.faults.seed + 7919u * static_cast<unsigned>(p);
    c.card.attach_timeout_ms = 5000;
    c.card.block_size = o.block_size;
    c.depth = o.depth;
    c.rx_blocks = o.rx_blocks;
    c.timeout_ns = o.timeout_ns;
    c.give_up_ns = o.give_up_ns;
    c.receive_budget = o.receive_budget;
    c.checks_per_poll = o.checks_per_poll;
    c.defer_acks = o.defer_acks;
    c.piggyback_acks = o.piggyback_acks;
    c.multi_ack = o.multi_ack;
    c.acks_wait_when_idle = o.acks_wait_when_idle;
    c.ordered = o.ordered;
    c.adaptive_timeout = o.adaptive_timeout;
    c.early_resend = o.early_resend;
    c.by_reference = o.by_reference;
    c.headless_cells = o.headless_cells;
    if (o.crc_only_when_corrupting) c.card.crc = o.faults.corrupt > 0;
    if (o.manual_clock) c.manual_time = &time_;
    return c;
  }
  ep& operator[](int p) { return *eps_[p]; }
  int size() const { return static_cast<int>(eps_.size()); }
  // One round: every endpoint polls once.
  void pump() {
    for (auto& e : eps_) (void)e->poll();
  }
  sys::manual_time& time() { return time_; }
  const std::string& job() const { return job_; }

 private:
  std::string job_;
  sys::manual_time time_;
  std::vector<std::unique_ptr<ep>> eps_;
};

}  // namespace hpam::test
