// Protection keys, the clock (real and manual), placement, status names.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>

#include "../common/test_util.hpp"
#include "sys/clock.hpp"
#include "sys/placement.hpp"
#include "sys/protection_key.hpp"
#include "sys/status.hpp"

namespace hpam::sys {
namespace {

TEST(protection_key, nonzero_and_distinct) {
  std::set<protection_key> keys;
  for (int i = 0; i < 1000; ++i) {
    const protection_key k = random_protection_key();
    EXPECT_NE(k, 0u);
    keys.insert(k);
  }
  EXPECT_EQ(keys.size(), 1000u);
}

// Keys come a batch per getrandom: a child forked while the parent's batch
// is half used must not draw the keys the parent draws next.
TEST(protection_key, parent_and_forked_child_draw_different_keys) {
  (void)random_protection_key();  // the batch is filled and partly used
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t kid = test::fork_child([&] {
    protection_key k[8];
    for (auto& x : k) x = random_protection_key();
    return write(fds[1], k, sizeof k) == static_cast<ssize_t>(sizeof k) ? 0 : 1;
  });
  close(fds[1]);
  protection_key child[8];
  ASSERT_EQ(read(fds[0], child, sizeof child), static_cast<ssize_t>(sizeof child));
  close(fds[0]);
  ASSERT_EQ(test::reap(kid), 0);
  std::set<protection_key> keys(child, child + 8);
  for (int i = 0; i < 8; ++i) keys.insert(random_protection_key());
  EXPECT_EQ(keys.size(), 16u);
}

TEST(clock, real_clock_is_monotonic) {
  clock c;
  EXPECT_FALSE(c.is_manual());
  uint64_t prev = c.now_ns(), prev_mono = clock::monotonic_ns();
  for (int i = 0; i < 100000; ++i) {
    const uint64_t t = c.now_ns(), m = clock::monotonic_ns();
    ASSERT_GE(t, prev);
    ASSERT_GE(m, prev_mono);
    prev = t;
    prev_mono = m;
  }
}

TEST(clock, real_clock_advances) {
  clock c;
  const uint64_t t0 = c.now_ns(), m0 = clock::monotonic_ns();
  while (clock::monotonic_ns() - m0 < 2'000'000) {
  }
  EXPECT_GT(c.now_ns(), t0);
}

TEST(clock, manual_time_is_what_the_test_says) {
  manual_time t;
  clock a(&t), b(&t);
  EXPECT_TRUE(a.is_manual());
  EXPECT_EQ(a.now_ns(), 0u);
  t.advance(123);
  EXPECT_EQ(a.now_ns(), 123u);
  EXPECT_EQ(b.now_ns(), 123u);
  t.ns.store(uint64_t{1} << 62);
  EXPECT_EQ(b.now_ns(), uint64_t{1} << 62);
  const clock copy = a;
  t.advance(1);
  EXPECT_EQ(copy.now_ns(), (uint64_t{1} << 62) + 1);
}

TEST(placement, never_fails_and_sees_at_least_one_node) {
  const size_t len = 1 << 20;
  void* area = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(area, MAP_FAILED);
  const placement_result r = place_near_this_process(area, len);
  EXPECT_GE(r.numa_nodes, 1);
  if (r.numa_nodes == 1) {
    EXPECT_EQ(r.bound_node, -1);
  }
  if (r.bound_node >= 0) {
    EXPECT_GT(r.numa_nodes, 1);
  }
  std::memset(area, 0x5a, len);  // still usable memory
  EXPECT_EQ(static_cast<unsigned char*>(area)[len - 1], 0x5a);
  munmap(area, len);
  // Not even a tiny or odd-sized area makes it fail.
  char small[100];
  EXPECT_GE(place_near_this_process(small, sizeof small).numa_nodes, 1);
}

TEST(status, every_value_has_its_own_name) {
  std::set<std::string> names;
  for (int v = 0; v <= static_cast<int>(hpam::status::not_supported); ++v) {
    const std::string n = hpam::status_name(static_cast<hpam::status>(v));
    EXPECT_FALSE(n.empty());
    EXPECT_NE(n, "unknown status");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(hpam::status::not_supported) + 1);
  EXPECT_TRUE(hpam::is_ok(hpam::status::ok));
  EXPECT_FALSE(hpam::is_ok(hpam::status::busy));
}

}  // namespace
}  // namespace hpam::sys
