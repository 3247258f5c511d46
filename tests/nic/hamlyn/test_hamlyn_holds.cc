// Direct deposits' holds (layout.hpp, hold_line): a sender that carries a
// deposit out itself announces it in its hold line of the destination's card
// with plain stores, and the owner's revoke runs the global barrier and
// waits for the lines; with hold lines off, the same deposits hold by
// slot::users. Either way, once revoke returns not one more byte lands.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "hamlyn_fixture.hpp"
#include "sys/membarrier.hpp"

namespace hpam::test {
namespace {

using namespace hpam::nic::hamlyn;

// One direct deposit by process 0 into slot s of process 1's card, as the
// deposit layer's put_now makes it: false once refused.
bool put_direct(hamlyn_job& j, uint32_t s, uint64_t key, uint64_t bytes, uint8_t value) {
  const card_view& v = j[0].view(1);
  std::byte* ptr = nullptr;
  uint64_t address = 0;
  if (!is_ok(j[0].receiver().resolve_direct(v, s, key, 0, bytes, ptr, address)) || !ptr)
    return false;
  std::memset(ptr, value, bytes);
  j[0].receiver().unresolve_direct(v, s);
  return true;
}

class direct_holds : public ::testing::TestWithParam<bool> {};

TEST_P(direct_holds, nothing_lands_after_revoke_returns) {
  const bool lines = GetParam();
  hamlyn_job j(2, [&](card_config& c) { c.direct_holds = lines; });
  const bool offered = lines && sys::global_barriers_available();
  EXPECT_EQ(j[0].view(1).holds != nullptr, offered) << "the peer's hold lines, read at attach";
  guarded_area a(j[1], 4096);
  const uint32_t s = slot_over(j[1], a);
  const uint64_t key = j[1].slots().slot_at(s).protection_key.load();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> landed{0};
  std::thread sender([&] {
    for (uint8_t k = 1; !stop.load(std::memory_order_relaxed); ++k) {
      if (!put_direct(j, s, key, a.bytes, k)) break;
      landed.fetch_add(1, std::memory_order_relaxed);
    }
  });
  expect_nothing_lands_after_revoke(j[1], a, s, sender, landed, 1000, stop);
  EXPECT_EQ(j[1].slots().slot_at(s).users.load(), 0u) << "every hold let go";
  if (offered) {
    EXPECT_EQ(j[0].view(1).holds[0].slot_plus_one.load(), 0u) << "my line names nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(lines_or_users, direct_holds, ::testing::Bool());

// A hold line that names the slot (a sender inside a deposit, or any process
// that writes the line) keeps revoke waiting until it is let go.
TEST(direct_holds, revoke_waits_for_a_line_that_names_the_slot) {
  if (!sys::global_barriers_available()) GTEST_SKIP() << "no global barriers: no hold lines";
  hamlyn_job j(2);
  ASSERT_NE(j[0].view(1).holds, nullptr);
  guarded_area a(j[1], 256);
  const uint32_t s = slot_over(j[1], a);
  hold_line& mine = j[0].view(1).holds[0];
  mine.slot_plus_one.store(s + 1);
  const auto start = std::chrono::steady_clock::now();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    mine.slot_plus_one.store(0);
  });
  EXPECT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  release.join();
  // Another slot's line does not hold this one.
  const uint32_t s2 = slot_over(j[1], a);
  mine.slot_plus_one.store(s + 1);
  EXPECT_EQ(j[1].slots().revoke(s2), status::ok);
  mine.slot_plus_one.store(0);
}

// A peer whose header names hold lines outside its area memory (damaged or
// hostile) gets none used: deposits there hold by slot::users.
TEST(direct_holds, lines_outside_the_area_are_not_used) {
  if (!sys::global_barriers_available()) GTEST_SKIP() << "no global barriers: no hold lines";
  const std::string job = unique_job("holds-forged");
  card_config c1 = hamlyn_config(job, 2, 1);
  card owner(c1);
  card_header& h = const_cast<card_header&>(*owner.view(1).header);
  const uint64_t good = h.direct_holds;
  ASSERT_NE(good, 0u);
  for (const uint64_t forged : {uint64_t{8}, good + 1, h.area_offset + h.area_bytes - 64}) {
    h.direct_holds = forged;
    card_config c0 = hamlyn_config(job, 2, 0);
    card sender(c0);
    sender.attach_peer(1);
    EXPECT_EQ(sender.view(1).holds, nullptr) << forged;
  }
  h.direct_holds = good;
}

}  // namespace
}  // namespace hpam::test
