// The protocol between forked processes: exactly-once delivery and
// byte-exact bulk data under each fault kind alone and all at once, stall
// and recovery with D=1, and give-up on a peer that died.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "am/endpoint_impl.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

constexpr int procs = 3;
constexpr int per_peer = 240;  // requests to each peer: half fetch-and-add, half bulk store
constexpr size_t store_len = 1000;
enum : unsigned { h_add = 1, h_result = 2, h_store = 3 };

uint8_t pattern(int src, int i, size_t k) {
  return static_cast<uint8_t>(src * 131 + i * 7 + k * 13 + 1);
}

// Allocated before fork, so every child has it at the same address: a bulk
// store's target address is meaningful in every process.
struct shared_layout {
  static constexpr size_t inbox_len = per_peer / 2 * store_len;
  std::vector<uint8_t> all = std::vector<uint8_t>(procs * inbox_len, 0);  // every process's segment
  uint8_t* inbox(int src) {
    return all.data() + src * inbox_len;
  }  // per_peer/2 stores of store_len
};

struct proc_state {
  uint64_t add_counter[procs] = {};   // per source: fetch-and-add target
  int store_runs[procs] = {};         // per source: bulk handler runs
  std::vector<uint64_t> olds[procs];  // per destination: old values replies brought back
};

template <class Card>
void on_add(hpam_token* t, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  auto* s = static_cast<proc_state*>(ctx);
  const uint64_t w[4] = {s->add_counter[t->src], 0, 0, 0};
  s->add_counter[t->src] += a0;
  (void)static_cast<am::endpoint<Card>*>(t->endpoint)->reply_4(*t, h_result, w);
}
void on_result(hpam_token* t, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  static_cast<proc_state*>(ctx)->olds[t->src].push_back(a0);
}
void on_store(hpam_token* t, void* ctx, void*, size_t len, uint64_t) {
  if (len == store_len) static_cast<proc_state*>(ctx)->store_runs[t->src]++;
}

// One process of the all-to-all exchange; returns 0 when everything it
// received and got back is exact, else a code naming the first failure.
template <class Card>
int exchange(const std::string& job, int me, const nic::fault_config& faults, shared_layout& mem) {
  am::endpoint_config c;
  c.card.job = job;
  c.card.nprocs = procs;
  c.card.my_proc = me;
  c.card.faults = faults;
  c.card.faults.seed = faults.seed + 101u * static_cast<unsigned>(me);
  c.card.attach_timeout_ms = 20'000;
  c.timeout_ns = 200'000;
  c.give_up_ns = 40'000'000'000ull;
  am::endpoint<Card> e(c);
  e.connect_all();
  if (e.set_segment(mem.all.data(), mem.all.size()) != hpam::status::ok) return 9;
  proc_state s;
  (void)e.register_handler4(h_add, on_add<Card>, &s);
  (void)e.register_handler4(h_result, on_result, &s);
  (void)e.register_handler_bulk(h_store, on_store, &s);
  std::vector<uint8_t> src(store_len);
  for (int i = 0; i < per_peer; ++i)
    for (int d = 0; d < procs; ++d) {
      if (d == me) continue;
      if (i % 2 == 0) {
        const uint64_t w[4] = {1, 0, 0, 0};
        if (e.request_4(d, h_add, w, true) != hpam::status::ok) return 10;
      } else {
        for (size_t k = 0; k < store_len; ++k) src[k] = pattern(me, i / 2, k);
        const uint64_t target = reinterpret_cast<uint64_t>(mem.inbox(me) + (i / 2) * store_len);
        if (e.request_store(d, h_store, src.data(), store_len, target, 0, true) != hpam::status::ok)
          return 11;
      }
      (void)e.poll();
    }
  if (e.drain() != hpam::status::ok) return 12;
  for (int p = 0; p < procs; ++p) {
    if (p == me) continue;
    if (s.add_counter[p] != per_peer / 2) return 20;  // exactly once
    if (s.store_runs[p] != per_peer / 2) return 21;
    auto olds = s.olds[p];
    std::sort(olds.begin(), olds.end());
    if (olds.size() != per_peer / 2) return 22;
    for (size_t i = 0; i < olds.size(); ++i)
      if (olds[i] != i) return 23;
    for (int i = 0; i < per_peer / 2; ++i)
      for (size_t k = 0; k < store_len; ++k)
        if (mem.inbox(p)[i * store_len + k] != pattern(p, i, k)) return 24;
  }
  return 0;
}

struct fault_case {
  const char* name;
  nic::fault_config faults;
};

nic::fault_config make(double drop, double dup, double corrupt, double reorder, double delay) {
  nic::fault_config f;
  f.drop = drop;
  f.duplicate = dup;
  f.corrupt = corrupt;
  f.reorder = reorder;
  f.delay = delay;
  f.delay_ns = 50'000;
  f.seed = 12345;
  return f;
}

class protocol_fork : public ::testing::TestWithParam<fault_case> {};

template <class Card>
void run_exchange(const nic::fault_config& faults) {
  const std::string job = unique_job("fork");
  shared_layout mem;
  pid_t pids[procs];
  for (int p = 0; p < procs; ++p)
    pids[p] = fork_child([&, p] { return exchange<Card>(job, p, faults, mem); }, 120);
  for (int p = 0; p < procs; ++p) EXPECT_EQ(reap(pids[p], 150'000), 0) << "process " << p;
}

TEST_P(protocol_fork, exactly_once_and_byte_exact_medusa) {
  run_exchange<nic::medusa_card>(GetParam().faults);
}

TEST_P(protocol_fork, exactly_once_and_byte_exact_hamlyn) {
  run_exchange<nic::hamlyn_am_card>(GetParam().faults);
}

INSTANTIATE_TEST_SUITE_P(faults, protocol_fork,
                         ::testing::Values(fault_case{"none", make(0, 0, 0, 0, 0)},
                                           fault_case{"drop", make(0.05, 0, 0, 0, 0)},
                                           fault_case{"duplicate", make(0, 0.05, 0, 0, 0)},
                                           fault_case{"corrupt", make(0, 0, 0.05, 0, 0)},
                                           fault_case{"reorder", make(0, 0, 0, 0.2, 0)},
                                           fault_case{"delay", make(0, 0, 0, 0, 0.05)},
                                           fault_case{"all", make(0.05, 0.02, 0.02, 0.1, 0.02)}),
                         [](const auto& info) { return std::string(info.param.name); });

// D = 1: every second request stalls until the reply to the first arrives,
// serving the network meanwhile; nothing is lost.
template <class Card>
class protocol_fork_typed : public ::testing::Test {};
TYPED_TEST_SUITE(protocol_fork_typed, card_types);

TYPED_TEST(protocol_fork_typed, depth_one_stalls_and_recovers) {
  const std::string job = unique_job("stall");
  auto proc = [&](int me) {
    am::endpoint_config c;
    c.card.job = job;
    c.card.nprocs = 2;
    c.card.my_proc = me;
    c.depth = 1;
    c.timeout_ns = 500'000;
    am::endpoint<TypeParam> e(c);
    e.connect_all();
    proc_state s;
    (void)e.register_handler4(h_add, on_add<TypeParam>, &s);
    (void)e.register_handler4(h_result, on_result, &s);
    const uint64_t w[4] = {1, 0, 0, 0};
    for (int i = 0; i < 500; ++i)
      if (e.request_4(1 - me, h_add, w, true) != hpam::status::ok) return 10;
    if (e.drain() != hpam::status::ok) return 11;
    if (s.add_counter[1 - me] != 500 || s.olds[1 - me].size() != 500) return 12;
    if (e.peer_counters(1 - me).stalls == 0) return 13;
    return 0;
  };
  pid_t a = fork_child([&] { return proc(0); }), b = fork_child([&] { return proc(1); });
  EXPECT_EQ(reap(a), 0);
  EXPECT_EQ(reap(b), 0);
}

// The peer attaches and dies: the give-up error names it, within the
// configured give-up time (plus one timeout walk).
TYPED_TEST(protocol_fork_typed, dead_peer_reported_by_name) {
  const std::string job = unique_job("dead");
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = fork_child([&] {
    am::endpoint_config c;
    c.card.job = job;
    c.card.nprocs = 2;
    c.card.my_proc = 1;
    am::endpoint<TypeParam> e(c);
    e.connect_all();
    char byte;
    return read(go[0], &byte, 1) == 1 ? 0 : 1;  // then exits without serving the network
  });
  am::endpoint_config c;
  c.card.job = job;
  c.card.nprocs = 2;
  c.card.my_proc = 0;
  c.timeout_ns = 1'000'000;
  c.give_up_ns = 200'000'000;
  am::endpoint<TypeParam> e(c);
  e.connect_all();
  ASSERT_EQ(write(go[1], "x", 1), 1);
  ASSERT_EQ(reap(child), 0);
  close(go[0]);
  close(go[1]);
  proc_state s;
  (void)e.register_handler4(h_result, on_result, &s);
  const uint64_t w[4] = {};
  const uint64_t t0 = sys::clock::monotonic_ns();
  ASSERT_EQ(e.request_4(1, h_result, w, true), hpam::status::ok);
  hpam::status st = hpam::status::ok;
  ASSERT_TRUE(spin_until([&] { return (st = e.poll()) != hpam::status::ok; }, 10'000));
  const uint64_t elapsed_ms = (sys::clock::monotonic_ns() - t0) / 1'000'000;
  EXPECT_EQ(st, hpam::status::peer_unreachable);
  EXPECT_EQ(e.unreachable_peer(), 1);
  EXPECT_NE(e.last_error().find("process 1"), std::string::npos);
  EXPECT_GE(elapsed_ms, 200u);
  EXPECT_LT(elapsed_ms, 2'000u);
}

}  // namespace
}  // namespace hpam::test
