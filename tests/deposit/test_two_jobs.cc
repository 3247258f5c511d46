// Two jobs of the same user on one node at once. Every card of each is
// readable and writable by the other (same user): a process of job B maps
// job A's cards and presents B's tickets there, directly and as packets.
// Each is refused and counted in A's card, and nothing of A is read or
// written. (The protocol-level counterpart, packets stamped with another
// job's key, is tests/am/test_job_key.cc.)
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"

namespace hpam::deposit {
namespace {

std::unique_ptr<endpoint> make(const std::string& job, int nprocs, int me) {
  setup s;
  s.job = job;
  s.nprocs = nprocs;
  s.my_proc = me;
  s.cross_memory = false;  // private memory only through packets its owner serves
  s.packet_size = 1024;
  s.card_memory = 1u << 20;
  s.attach_timeout_ms = 5000;
  return std::make_unique<endpoint>(s);
}

TEST(two_jobs, tickets_of_one_job_open_nothing_of_another) {
  const std::string a = test::unique_job("jobA"), b = test::unique_job("jobB");
  // Job A: process 1 holds a secret in private memory and in card memory.
  // Its process slot 2 is free: the intruder from job B takes it.
  auto a0 = make(a, 3, 0), a1 = make(a, 3, 1);
  std::vector<uint64_t> secret(64, 0x5EC2E75EC2E75EC2ull);
  ticket a_private, a_card;
  void* a_card_memory = nullptr;
  ASSERT_EQ(a1->register_memory(secret.data(), secret.size() * 8, a_private), status::ok);
  ASSERT_EQ(a1->allocate_memory(512, a_card_memory, a_card), status::ok);
  std::memset(a_card_memory, 0x5E, 512);
  // Job B: process 1 registers memory of its own, at the same slots.
  auto b0 = make(b, 2, 0), b1 = make(b, 2, 1);
  std::vector<uint64_t> mine(64, 0);
  ticket b_private, b_card;
  void* b_card_memory = nullptr;
  ASSERT_EQ(b1->register_memory(mine.data(), mine.size() * 8, b_private), status::ok);
  ASSERT_EQ(b1->allocate_memory(512, b_card_memory, b_card), status::ok);
  ASSERT_EQ(b_private.slot, a_private.slot);  // same slot numbers, different keys
  ASSERT_EQ(b_card.slot, a_card.slot);
  auto intruder = make(a, 3, 2);  // a process of job B, in job A's free slot
  intruder->attach_peer(1);
  auto serve = [&] {
    for (int i = 0; i < 200; ++i) {
      a1->progress();
      intruder->progress();
    }
  };
  const uint64_t rejected_before = a1->card().arrivals().key_rejections;
  std::vector<uint64_t> got(64, 0);
  uint64_t fetched = 0;
  for (const ticket& t : {b_private, b_card}) {  // B's tickets, pointed at A's process 1
    op_handle h;
    EXPECT_EQ(intruder->get(got.data(), 256, t, 0, &h), status::rejected);
    EXPECT_EQ(intruder->atomic(atomic_op::swap, atomic_width::w64, t, 0, 0, 0, &fetched, &h),
              status::rejected);
    const uint64_t one = 1;  // a put is refused where it lands (card memory at once,
    (void)intruder->put(&one, sizeof one, t, 0, nullptr);  // private memory when the owner polls)
    serve();
  }
  EXPECT_GE(a1->card().arrivals().key_rejections - rejected_before, 6u);
  for (uint64_t v : got) EXPECT_EQ(v, 0u);  // nothing of A came back
  EXPECT_EQ(fetched, 0u);
  for (uint64_t v : secret) ASSERT_EQ(v, 0x5EC2E75EC2E75EC2ull);  // nothing of A changed
  for (int i = 0; i < 512; ++i) ASSERT_EQ(static_cast<uint8_t*>(a_card_memory)[i], 0x5E);
  for (uint64_t v : mine) EXPECT_EQ(v, 0u);  // and B's own memory was never the target
}

}  // namespace
}  // namespace hpam::deposit
