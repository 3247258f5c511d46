// Cards of one job living in one test process, each with its own segment,
// attached to each other.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "../../common/test_util.hpp"
#include "nic/hamlyn/hamlyn_card.hpp"

namespace hpam::test {

inline nic::hamlyn::card_config hamlyn_config(const std::string& job, int nprocs, int me) {
  nic::hamlyn::card_config c;
  c.job = job;
  c.nprocs = nprocs;
  c.my_proc = me;
  c.area_bytes = 1u << 20;
  c.metadata_entries = 64;
  c.notify_capacity = 64;
  c.attach_timeout_ms = 5000;
  return c;
}

class hamlyn_job {
 public:
  // `tweak` adjusts each card's configuration before it is built.
  template <class Tweak>
  hamlyn_job(int nprocs, Tweak&& tweak, const char* tag = "hamlyn") : job_(unique_job(tag)) {
    for (int p = 0; p < nprocs; ++p) {
      nic::hamlyn::card_config c = hamlyn_config(job_, nprocs, p);
      tweak(c);
      cards_.push_back(std::make_unique<nic::hamlyn::card>(c));
    }
    for (auto& c : cards_) c->attach_all();
  }
  explicit hamlyn_job(int nprocs) : hamlyn_job(nprocs, [](nic::hamlyn::card_config&) {}) {}
  nic::hamlyn::card& operator[](int p) { return *cards_[p]; }
  const std::string& job() const { return job_; }

 private:
  std::string job_;
  std::vector<std::unique_ptr<nic::hamlyn::card>> cards_;
};

// A slot over fresh card memory of `bytes` with guard bytes on both sides.
struct guarded_area {
  static constexpr uint64_t guard = 256;
  static constexpr std::byte pattern{0xA5};
  uint64_t offset = 0;  // the slot's base in card memory
  std::byte* memory = nullptr;
  uint64_t bytes = 0;
  guarded_area(nic::hamlyn::card& c, uint64_t n) : bytes(n) {
    uint64_t at = 0;
    EXPECT_EQ(c.slots().allocate_area(n + 2 * guard, at), status::ok);
    std::memset(c.slots().area_address(at), static_cast<int>(pattern), n + 2 * guard);
    offset = at + guard;
    memory = c.slots().area_address(offset);
  }
  bool guards_intact() const {
    for (uint64_t i = 0; i < guard; ++i)
      if (memory[-1 - static_cast<int64_t>(i)] != pattern || memory[bytes + i] != pattern)
        return false;
    return true;
  }
  bool untouched() const {
    for (uint64_t i = 0; i < bytes; ++i)
      if (memory[i] != pattern) return false;
    return guards_intact();
  }
};

// Revokes slot s of `owner` once `done` has counted `warm` deposits of
// `sender` (a thread depositing into area a until `stop`): once revoke
// returns, not one more byte of a changes; the sender's next deposit is
// refused. Refused as revoked, or, when it read the state still active
// just before revoke stored it and the key just after revoke zeroed it, by
// the key: the sender stops at its first refusal.
inline void expect_nothing_lands_after_revoke(nic::hamlyn::card& owner, const guarded_area& a,
                                              uint32_t s, std::thread& sender,
                                              const std::atomic<uint64_t>& done, uint64_t warm,
                                              std::atomic<bool>& stop) {
  while (done.load() < warm) std::this_thread::yield();
  EXPECT_EQ(owner.slots().revoke(s), status::ok);
  std::vector<std::byte> snapshot(a.memory, a.memory + a.bytes);
  EXPECT_TRUE(spin_until(
      [&] {
        const nic::hamlyn::arrival_totals t = owner.arrivals();
        return t.revoked_rejections + t.key_rejections >= 1;
      },
      20'000));
  stop = true;
  sender.join();
  EXPECT_EQ(std::memcmp(snapshot.data(), a.memory, a.bytes), 0);
  EXPECT_TRUE(a.guards_intact());
}

// A normal-mode slot over all of `a` on card c with `metadata_count`
// metadata entries: its index (a failure fails the test).
inline uint32_t slot_over(nic::hamlyn::card& c, const guarded_area& a,
                          uint32_t metadata_count = 1) {
  nic::hamlyn::slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.metadata_count = metadata_count;
  uint32_t s = ~0u;
  EXPECT_EQ(c.slots().create_slot(spec, s), status::ok);
  return s;
}

}  // namespace hpam::test
