// Deposit into another process's private memory: by cross-memory attach
// (the receiver's CPU does nothing until it looks at its notification
// queue) and by the fallback packets it deposits itself when it polls
// (forced by the cross_memory parameter).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "hamlyn_fixture.hpp"
#include "nic/hamlyn/cross_memory.hpp"

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

constexpr size_t guard = 4096;
constexpr uint8_t guard_byte = 0xC3;

uint8_t expected_byte(size_t i) {
  return static_cast<uint8_t>(i * 131 + (i >> 10));
}

struct pipe_pair {
  int fd[2];
  pipe_pair() { EXPECT_EQ(pipe(fd), 0); }
  ~pipe_pair() {
    close(fd[0]);
    close(fd[1]);
  }
  template <class T>
  bool put(const T& v) {
    return write(fd[1], &v, sizeof v) == static_cast<ssize_t>(sizeof v);
  }
  template <class T>
  bool get(T& v) {
    return read(fd[0], &v, sizeof v) == static_cast<ssize_t>(sizeof v);
  }
};

// The receiver: registers private memory, hands its ticket over, and checks
// what is in the memory before and after it polls.
int receiver(const std::string& job, bool cross, size_t bytes, pipe_pair& to_parent,
             pipe_pair& from_parent) {
  card_config c = hamlyn_config(job, 2, 1);
  c.cross_memory = cross;
  card me(c);
  me.attach_all();
  std::vector<uint8_t> memory(bytes + 2 * guard, guard_byte);
  slot_spec s;
  s.memory = area_memory::process;
  s.base = reinterpret_cast<uint64_t>(memory.data() + guard);
  s.bound = bytes;
  s.metadata_count = 1;
  uint32_t index;
  if (!is_ok(me.slots().create_slot(s, index))) return 2;
  const ticket t = me.slots().make_ticket(index, 0, 0, bytes, true);
  if (!to_parent.put(t)) return 3;
  char posted;
  if (!from_parent.get(posted)) return 4;
  // Before polling: with cross-memory attach every byte is already here.
  bool all_there = true;
  for (size_t i = 0; i < bytes; ++i) all_there &= memory[guard + i] == expected_byte(i);
  if (cross && !all_there) return 5;
  if (!cross && all_there) return 6;  // nothing may land before the receiver polls
  notification n;
  if (!me.receive_block(0, n, 20'000'000'000ull)) return 7;
  if (me.receive_block(0, n, 1'000'000)) return 12;  // nothing more comes: times out
  for (size_t i = 0; i < bytes; ++i)
    if (memory[guard + i] != expected_byte(i)) return 8;
  for (size_t i = 0; i < guard; ++i)
    if (memory[i] != guard_byte || memory[guard + bytes + i] != guard_byte) return 9;
  const uint64_t fallback = me.arrivals().fallback_packets;
  if (cross ? fallback != 0 : fallback == 0) return 10;
  const char done = 'd';
  return to_parent.put(done) ? 0 : 11;
}

class hamlyn_fork : public ::testing::TestWithParam<bool> {};

TEST_P(hamlyn_fork, deposit_into_private_memory_of_another_process) {
  const bool cross = GetParam();
  const std::string job = unique_job("hfork");
  const size_t bytes = 300'000;  // 75 packets: more than the receiver's inbound FIFO holds
  pipe_pair up, down;
  const pid_t child = fork_child([&] { return receiver(job, cross, bytes, up, down); });
  card_config c = hamlyn_config(job, 2, 0);
  c.cross_memory = cross;
  card me(c);
  me.attach_all();
  ticket t{};
  ASSERT_TRUE(up.get(t));
  if (cross && !me.cross_memory_to(1)) {
    kill(child, SIGKILL);
    (void)reap(child);
    GTEST_SKIP() << "the kernel does not allow process_vm_writev here (yama ptrace_scope = "
                 << yama_ptrace_scope() << ")";
  }
  EXPECT_EQ(me.cross_memory_to(1), cross);
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = expected_byte(i);
  iovec v{data.data(), bytes};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  send_handle h;
  ASSERT_EQ(me.terminus().send(t, m, h), status::ok);
  EXPECT_EQ(me.terminus().state(h), cross ? send_state::sent : send_state::pending);
  const char posted = 'p';
  ASSERT_TRUE(down.put(posted));
  ASSERT_TRUE(spin_until([&] {
    me.terminus().kick();
    return me.terminus().state(h) == send_state::sent;
  }));
  char done;
  ASSERT_TRUE(up.get(done));
  EXPECT_EQ(reap(child), 0);
}

INSTANTIATE_TEST_SUITE_P(paths, hamlyn_fork, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("cross_memory") : std::string("fallback");
                         });

// Wrong key and out-of-bounds packets through the fallback path are refused
// by the receiver itself, and counted there.
TEST(hamlyn_fork_reject, fallback_packets_are_checked_by_the_receiver) {
  hamlyn_job j(2, [](card_config& c) { c.cross_memory = false; });
  std::vector<uint8_t> memory(1024 + 2 * guard, guard_byte);
  slot_spec s;
  s.memory = area_memory::process;
  s.base = reinterpret_cast<uint64_t>(memory.data() + guard);
  s.bound = 1024;
  s.metadata_count = 1;
  uint32_t index;
  ASSERT_EQ(j[1].slots().create_slot(s, index), status::ok);
  ASSERT_FALSE(j[0].cross_memory_to(1));
  ticket bad_key = j[1].slots().make_ticket(index, 0, 0, 1 << 20, true);
  bad_key.protection_key++;
  ticket bad_bounds = j[1].slots().make_ticket(index, 0, 0, 1 << 20, true);
  std::vector<uint8_t> data(2000, 1);
  for (const ticket& t : {bad_key, bad_bounds}) {
    iovec v{data.data(), 2000};
    message m;
    m.gather = &v;
    m.gather_count = 1;
    send_handle h;
    ASSERT_EQ(j[0].terminus().send(t, m, h), status::ok);
    EXPECT_EQ(j[0].terminus().state(h), send_state::sent);  // the sender cannot know
  }
  notification n;
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 1u);
  for (uint8_t b : memory) ASSERT_EQ(b, guard_byte);
}

}  // namespace
}  // namespace hpam::test
