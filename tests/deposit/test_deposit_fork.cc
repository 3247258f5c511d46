// Several processes on one destination: fetch-and-add sums exactly (also
// against the owner's own CPU atomics on the same word), and appends to a
// remote queue by store-indirect-with-post-increment lose and duplicate
// nothing; on card memory (done by the senders) and on private memory (done
// by the owner when it polls).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "../common/test_util.hpp"
#include "deposit/deposit.hpp"
#include "sys/clock.hpp"

namespace hpam::deposit {
namespace {

constexpr int senders = 3;
constexpr int nprocs = senders + 1;  // proc 0 owns the memory
constexpr uint64_t adds_each = 1000;
constexpr uint64_t appends_each = 300;

setup setup_for(const std::string& job, int me, bool cross, int procs = nprocs) {
  setup s;
  s.job = job;
  s.nprocs = procs;
  s.my_proc = me;
  s.cross_memory = cross;
  s.card_memory = 1u << 20;
  s.attach_timeout_ms = 10'000;
  return s;
}

struct record {
  uint32_t sender;
  uint32_t sequence;
};

// One sender: fetch-and-add on the counters, then appends to the queue.
int sender(const std::string& job, int me, bool cross, ticket counter, connection_ticket queue) {
  endpoint e(setup_for(job, me, cross));
  e.attach_all();
  uint64_t last64 = 0, last32 = 0;
  for (uint64_t i = 0; i < adds_each; ++i) {
    uint64_t f64 = 0, f32 = 0;
    op_handle a, b;
    if (!is_ok(e.atomic(atomic_op::add, atomic_width::w64, counter, 0, 1, 0, &f64, &a))) return 2;
    if (!is_ok(e.atomic(atomic_op::add, atomic_width::w32, counter, 8, 1, 0, &f32, &b))) return 3;
    if (!is_ok(e.wait(a)) || !is_ok(e.wait(b))) return 4;
    if (i > 0 && (f64 <= last64 || f32 <= last32)) return 5;  // each fetch sees a larger value
    last64 = f64;
    last32 = f32;
  }
  hybrid_op app{};
  app.code = hybrid_code::store_post_increment;
  app.reg_i = 0;
  app.reg_j = use_operand;
  app.cond_reg = 1;
  for (uint32_t i = 0; i < appends_each; ++i) {
    const record r{static_cast<uint32_t>(me), i};
    op_handle h;
    if (!is_ok(e.hybrid(queue, app, &r, sizeof r, nullptr, 0, nullptr, &h)) || !is_ok(e.wait(h)))
      return 6;
  }
  // Everyone counts itself in; the one that completes the count is notified on.
  hybrid_op done{};
  done.code = hybrid_code::register_op;
  done.reg_i = 1;
  done.reg_j = use_operand;
  done.fn = register_fn::add;
  done.operand = 1;
  done.condition = compare_fn::eq;
  done.cond_reg = 1;
  done.compare = senders;
  op_handle h;
  if (!is_ok(e.hybrid(queue, done, nullptr, 0, nullptr, 0, nullptr, &h)) || !is_ok(e.wait(h)))
    return 7;
  // Serve the network until the owner says it is finished with us.
  const uint64_t deadline = sys::clock::monotonic_ns() + 60'000'000'000ull;
  while (!e.card().peer_done(0) && sys::clock::monotonic_ns() < deadline) {
    e.progress();
    std::this_thread::yield();
  }
  return 0;
}

class deposit_fork : public ::testing::TestWithParam<std::pair<bool, bool>> {};

TEST_P(deposit_fork, concurrent_atomics_sum_exactly_and_queue_appends_are_exact) {
  const bool card_memory = GetParam().first, cross = GetParam().second;
  const std::string job = test::unique_job("depfork");
  endpoint owner(setup_for(job, 0, cross));
  const size_t queue_bytes = senders * appends_each * sizeof(record);
  std::vector<uint64_t> private_counter(4, 0);
  std::vector<record> private_queue(senders * appends_each + 1, record{~0u, ~0u});
  uint64_t* counter = private_counter.data();
  record* queue = private_queue.data();
  ticket counter_t{}, queue_t{};
  if (card_memory) {
    void* a;
    ASSERT_EQ(owner.allocate_memory(32, a, counter_t), status::ok);
    counter = static_cast<uint64_t*>(a);
    ASSERT_EQ(owner.allocate_memory(queue_bytes, a, queue_t), status::ok);
    queue = static_cast<record*>(a);
  } else {
    ASSERT_EQ(owner.register_memory(counter, 32, counter_t), status::ok);
    ASSERT_EQ(owner.register_memory(queue, queue_bytes, queue_t), status::ok);
  }
  connection_ticket queue_ct;
  ASSERT_EQ(owner.open_connection(-1, queue_t, 0, 1u << 1, queue_ct), status::ok);
  std::vector<pid_t> kids;
  for (int p = 1; p <= senders; ++p)
    kids.push_back(
        test::fork_child([&, p] { return sender(job, p, cross, counter_t, queue_ct); }, 120));
  owner.attach_all();
  // The owner's own CPU atomics on the same word, while the senders work.
  uint64_t own_adds = 0;
  notification n{};
  bool notified = false;
  const uint64_t deadline = sys::clock::monotonic_ns() + 90'000'000'000ull;
  while (!notified && sys::clock::monotonic_ns() < deadline) {
    owner.progress();
    if (own_adds < adds_each) {
      __atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
      ++own_adds;
    }
    notified = owner.next_notification(n);
    std::this_thread::yield();
  }
  ASSERT_TRUE(notified);
  EXPECT_EQ(n.metadata_index, hybrid_notification_index);
  EXPECT_EQ(n.metadata, static_cast<uint64_t>(senders));
  owner.card().announce_done();
  for (pid_t k : kids) EXPECT_EQ(test::reap(k, 60'000), 0);
  EXPECT_EQ(counter[0], senders * adds_each + own_adds);
  EXPECT_EQ(static_cast<uint32_t>(counter[1]), senders * adds_each);
  EXPECT_EQ(owner.get_register(queue_ct, 0), queue_bytes);
  std::vector<std::vector<int>> seen(senders + 1, std::vector<int>(appends_each, 0));
  for (size_t i = 0; i < senders * appends_each; ++i) {
    const record& r = queue[i];
    ASSERT_TRUE(r.sender >= 1 && r.sender <= senders && r.sequence < appends_each) << i;
    seen[r.sender][r.sequence]++;
  }
  for (int s = 1; s <= senders; ++s)
    for (uint64_t i = 0; i < appends_each; ++i) EXPECT_EQ(seen[s][i], 1) << s << " " << i;
  EXPECT_FALSE(owner.next_notification(n));  // exactly one notification
  if (!card_memory) {
    EXPECT_GT(owner.completed_remote_ops(), 0u);
  }
}

// A writer making lone puts (and puts longer than a batch) into private
// memory while its owner revokes the slot: once revoke returns, nothing
// lands any more (a put within the call holds the slot, in the writer's
// hold line, until its system call is done), and every later put is
// refused and counted.
int revoke_writer(const std::string& job, ticket t, size_t words, size_t long_at) {
  endpoint e(setup_for(job, 1, true, 2));
  e.attach_all();
  std::vector<uint64_t> block(512);
  const uint64_t deadline = sys::clock::monotonic_ns() + 60'000'000'000ull;
  for (uint64_t i = 1; sys::clock::monotonic_ns() < deadline; ++i) {
    op_handle h;
    status st;
    if (i % 16 == 0) {
      std::fill(block.begin(), block.end(), i);
      st = e.put(block.data(), block.size() * 8, t, long_at, &h);
    } else {
      st = e.put(&i, 8, t, (i % words) * 8, &h);
    }
    if (st == status::rejected) return e.cross_memory_to(0) && e.lone_puts() == 0 ? 3 : 0;
    if (!is_ok(st)) return 2;
    e.progress();  // a flush: the next put is lone
  }
  return 4;  // never refused
}

TEST(deposit_fork, puts_within_the_call_stop_landing_once_revoke_returns) {
  const std::string job = test::unique_job("deprevoke");
  endpoint owner(setup_for(job, 0, true, 2));
  constexpr size_t words = 64, long_at = 1024, bytes = long_at + 4096;
  std::vector<uint64_t> mem(bytes / 8, 0);
  ticket t;
  ASSERT_EQ(owner.register_memory(mem.data(), bytes, t), status::ok);
  const pid_t kid = test::fork_child([&] { return revoke_writer(job, t, words, long_at); }, 120);
  owner.attach_all();
  volatile uint64_t* w = mem.data();
  const uint64_t deadline = sys::clock::monotonic_ns() + 30'000'000'000ull;
  while ((w[1] < 100 || w[long_at / 8] == 0) && sys::clock::monotonic_ns() < deadline) {
    owner.progress();  // (the fallback path's packets, had the kernel refused)
    std::this_thread::yield();
  }
  ASSERT_GE(w[1], 100u) << "the writer's puts never landed";
  // A put refused by the revoke is counted revoked, or, when it read the
  // slot's state before the revoke and its key after (revoke zeroes it), a
  // wrong key: either is the revoke's refusal.
  const auto refused = [&owner] {
    const auto a = owner.card().arrivals();
    return a.revoked_rejections + a.key_rejections;
  };
  const uint64_t refused0 = refused();
  ASSERT_EQ(owner.revoke(t), status::ok);
  const std::vector<uint64_t> after(mem.begin(), mem.end());
  EXPECT_EQ(test::reap(kid, 60'000), 0);
  EXPECT_GE(refused() - refused0, 1u);
  for (size_t i = 0; i < mem.size(); ++i) ASSERT_EQ(w[i], after[i]) << "landed after revoke: " << i;
  for (size_t i = long_at / 8 + 1; i < mem.size(); ++i)  // each long put landed whole
    ASSERT_EQ(w[i], w[long_at / 8]) << i;
}

INSTANTIATE_TEST_SUITE_P(targets, deposit_fork,
                         ::testing::Values(std::make_pair(true, true), std::make_pair(false, true),
                                           std::make_pair(false, false)),
                         [](const ::testing::TestParamInfo<std::pair<bool, bool>>& i) {
                           return std::string(i.param.first ? "card_memory" : "private_memory") +
                                  (i.param.second ? "_cross" : "_fallback");
                         });

}  // namespace
}  // namespace hpam::deposit
