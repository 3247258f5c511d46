// A peer that computes is not a dead peer. After the give-up time the
// requester looks at the silent peer: it gives up when the peer's process
// has exited or is stopped, or when the peer polls (its card heartbeat
// advances) yet never answers; a peer that lives and does not poll is only
// busy, and its requests are retransmitted until it answers.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "am/endpoint_impl.hpp"
#include "protocol_fixture.hpp"

namespace hpam::test {
namespace {

enum : unsigned { h_note = 1 };

void on_note(hpam_token*, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
  ++*static_cast<int*>(ctx);
}

template <class Card>
class liveness : public ::testing::Test {};
using liveness_cards = ::testing::Types<nic::medusa_card, nic::hamlyn_am_card>;
TYPED_TEST_SUITE(liveness, liveness_cards);

// Both endpoints live in this process (running); process 1 does not poll
// for ten give-up times, then polls once: it was busy, and its answer ends
// the wait. Nothing is resent to it meanwhile: it has not read my request.
// adaptive: false, the paper's fixed timer, which resends at each timeout.
template <class Card>
void busy_peer_is_waited_for(bool adaptive) {
  job_options o;
  o.give_up_ns = 50'000'000;
  o.adaptive_timeout = adaptive;
  local_job<Card> j(o, "busy");
  int notes = 0;
  ASSERT_EQ(j[1].register_handler4(h_note, on_note, &notes), hpam::status::ok);
  const uint64_t w[4] = {};
  ASSERT_EQ(j[0].request_4(1, h_note, w, false), hpam::status::ok);
  hpam::status st = hpam::status::ok;
  for (int i = 0; i < 5000 && st == hpam::status::ok; ++i) {  // 500 ms, 10 give-up times
    j.time().advance(100'000);
    st = j[0].poll();
  }
  EXPECT_EQ(st, hpam::status::ok) << j[0].last_error();
  EXPECT_TRUE(j[0].request_outstanding(1));
  EXPECT_GT(j[0].peer_counters(1).busy_peer_waits, 0u);
  if (adaptive) {
    EXPECT_EQ(j[0].peer_counters(1).retransmissions, 0u);
    EXPECT_GE(j[0].peer_counters(1).resends_deferred, 10u);
  } else {  // past the give-up time it retransmits every recheck (at most): a few times
    EXPECT_GE(j[0].peer_counters(1).retransmissions, 10u);
  }
  (void)j[1].poll();
  (void)j[0].poll();
  EXPECT_FALSE(j[0].request_outstanding(1));
  EXPECT_EQ(notes, 1);
  EXPECT_EQ(j[0].unreachable_peer(), -1);
}

TYPED_TEST(liveness, busy_peer_is_waited_for_then_answers) {
  busy_peer_is_waited_for<TypeParam>(true);
}

TYPED_TEST(liveness, busy_peer_is_waited_for_then_answers_with_the_fixed_timer) {
  busy_peer_is_waited_for<TypeParam>(false);
}

// A child process keeps its endpoint and does `what` (stop itself, exit,
// or compute for a while without polling, then serve); the parent's request
// to it is answered, or given up on with a message saying what was seen.
template <class Card>
struct silent_child {
  std::string job = unique_job("silent");
  int go[2] = {-1, -1};
  pid_t pid = -1;
  explicit silent_child(char what) {
    if (pipe(go) != 0) throw std::runtime_error("pipe");
    pid = fork_child(
        [&] {
          am::endpoint_config c = config(1);
          am::endpoint<Card> e(c);
          e.connect_all();
          int notes = 0;
          (void)e.register_handler4(h_note, on_note, &notes);
          char byte;
          if (read(go[0], &byte, 1) != 1) return 1;
          if (what == 's') raise(SIGSTOP);
          if (what == 'x') return 0;  // exits without answering
          const uint64_t until = sys::clock::monotonic_ns() + 1'500'000'000ull;  // computes 1.5 s
          volatile uint64_t x = 0;
          while (sys::clock::monotonic_ns() < until) x = x + 1;
          while (notes == 0) (void)e.poll();
          return e.drain() == hpam::status::ok ? 0 : 2;
        },
        30);
  }
  am::endpoint_config config(int me) const {
    am::endpoint_config c;
    c.card.job = job;
    c.card.nprocs = 2;
    c.card.my_proc = me;
    c.timeout_ns = 1'000'000;
    c.give_up_ns = 300'000'000;
    return c;
  }
  void start() { ASSERT_EQ(write(go[1], "x", 1), 1); }
  ~silent_child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      (void)reap(pid);
    }
    close(go[0]);
    close(go[1]);
  }
};

// Sends one request and polls until it is answered or given up on (at most
// 10 s); returns the milliseconds it took.
template <class Card>
uint64_t request_and_wait(am::endpoint<Card>& e, hpam::status& st) {
  const uint64_t w[4] = {};
  const uint64_t t0 = sys::clock::monotonic_ns();
  st = e.request_4(1, h_note, w, true);
  if (st != hpam::status::ok) return 0;
  const uint64_t deadline = t0 + 10'000'000'000ull;
  while (st == hpam::status::ok && e.request_outstanding(1) &&
         sys::clock::monotonic_ns() < deadline)
    st = e.poll();
  return (sys::clock::monotonic_ns() - t0) / 1'000'000;
}

TYPED_TEST(liveness, computing_peer_answers_after_five_give_up_times) {
  silent_child<TypeParam> child('c');
  am::endpoint<TypeParam> e(child.config(0));
  e.connect_all();
  child.start();
  hpam::status st;
  const uint64_t ms = request_and_wait(e, st);
  EXPECT_EQ(st, hpam::status::ok) << e.last_error();
  EXPECT_FALSE(e.request_outstanding(1));
  EXPECT_GE(ms, 1'000u);  // it computed far past the 300 ms give-up time
  EXPECT_GT(e.peer_counters(1).busy_peer_waits, 0u);
  EXPECT_EQ(e.drain(), hpam::status::ok);
  EXPECT_EQ(reap(child.pid), 0);
  child.pid = -1;
}

TYPED_TEST(liveness, stopped_peer_is_given_up_on_by_name) {
  silent_child<TypeParam> child('s');
  am::endpoint<TypeParam> e(child.config(0));
  e.connect_all();
  child.start();
  hpam::status st;
  const uint64_t ms = request_and_wait(e, st);
  EXPECT_EQ(st, hpam::status::peer_unreachable);
  EXPECT_EQ(e.unreachable_peer(), 1);
  const std::string& err = e.last_error();
  EXPECT_NE(err.find("process 1"), std::string::npos) << err;
  EXPECT_NE(err.find("stopped"), std::string::npos) << err;
  EXPECT_NE(err.find("heartbeat stopped"), std::string::npos) << err;
  EXPECT_GE(ms, 300u);
  EXPECT_LT(ms, 1'300u);  // within the give-up time + 1 s
}

TYPED_TEST(liveness, exited_peer_is_given_up_on_by_name) {
  silent_child<TypeParam> child('x');
  am::endpoint<TypeParam> e(child.config(0));
  e.connect_all();
  child.start();
  EXPECT_EQ(reap(child.pid), 0);
  child.pid = -1;
  hpam::status st;
  const uint64_t ms = request_and_wait(e, st);
  EXPECT_EQ(st, hpam::status::peer_unreachable);
  const std::string& err = e.last_error();
  EXPECT_NE(err.find("process 1"), std::string::npos) << err;
  EXPECT_NE(err.find("exited"), std::string::npos) << err;
  EXPECT_GE(ms, 300u);
  EXPECT_LT(ms, 1'300u);
}

}  // namespace
}  // namespace hpam::test
