// deferred_acks (am/deferred_acks.hpp): when deferred acknowledgements
// leave, decided without an endpoint or a card. Each case defers acks,
// walks the points of a send and a poll where acks may leave, and checks
// exactly which acks each launched.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "am/deferred_acks.hpp"

namespace hpam::test {
namespace {

using am::deferred_acks;
using slot = std::pair<int, uint32_t>;  // [peer][instance]

am::endpoint_config settings(uint32_t depth, bool multi_ack, bool piggyback = true,
                             bool wait_when_idle = false) {
  am::endpoint_config c;
  c.acks_wait_when_idle = wait_when_idle;
  c.card.nprocs = 3;
  c.card.block_size = 256;
  c.depth = depth;
  c.multi_ack = multi_ack;
  c.piggyback_acks = piggyback;
  return c;
}

// What the acks launched at one point were.
struct launched {
  std::set<slot> acks;
  int calls = 0;  // launch calls: one per peer's row launched
  auto launcher() {
    return [this](int peer, uint64_t waiting) {
      ++calls;
      for (uint64_t w = waiting; w != 0; w &= w - 1)
        acks.insert({peer, static_cast<uint32_t>(__builtin_ctzll(w))});
    };
  }
};

// deferred_acks with the endpoint's part played: an ack's word is its
// [peer][instance] made unique (the tests here are about when acks leave;
// the words themselves are test_ack_rows.cc's), and a rider must carry it.
constexpr uint32_t word(int peer, uint32_t instance) {
  return static_cast<uint32_t>(peer) * 1000 + instance;
}
struct acks : deferred_acks {
  using deferred_acks::deferred_acks;
  void add(int peer, uint32_t instance) {
    deferred_acks::add(peer, instance, word(peer, instance));
  }
  void forget(int peer, uint32_t instance) {
    deferred_acks::forget(peer, instance, [peer](uint32_t i) { return word(peer, i); });
  }
  bool take_rider(int peer, uint32_t& instance) {
    am::ack_entry e{};
    if (!deferred_acks::take_rider(peer, e, [peer](uint32_t i) { return word(peer, i); }))
      return false;
    EXPECT_EQ(e.sequence, word(peer, e.instance));
    instance = e.instance;
    return true;
  }
};

void add(acks& a, int peer, uint32_t from, uint32_t n) {
  for (uint32_t i = from; i < from + n; ++i) a.add(peer, i);
}

TEST(deferred_acks, settings_come_from_the_configuration) {
  acks a(settings(16, true));
  EXPECT_TRUE(a.defer());
  EXPECT_TRUE(a.multi_ack());
  EXPECT_EQ(a.capacity(), am::multi_ack_capacity(256, 16));
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.may_ride()) << "nothing waits";
  auto c = settings(16, true);
  c.defer_acks = false;
  acks off(c);
  EXPECT_FALSE(off.defer());
  EXPECT_FALSE(off.multi_ack()) << "multi_ack needs deferred acks";
}

// Without multi_ack every waiting ack leaves behind the next request; with
// it, they wait for a poll.
TEST(deferred_acks, after_a_request_only_without_multi_ack) {
  for (bool multi : {false, true}) {
    acks a(settings(16, multi));
    add(a, 1, 0, 2);
    add(a, 2, 5, 1);
    launched l;
    a.after_request(l.launcher());
    if (multi) {
      EXPECT_TRUE(l.acks.empty());
      EXPECT_FALSE(a.empty());
    } else {
      EXPECT_EQ(l.acks, (std::set<slot>{{1, 0}, {1, 1}, {2, 5}}));
      EXPECT_TRUE(a.empty());
    }
  }
}

// Riding: only with piggyback_acks and an ack waiting; the oldest of that
// peer's row. A forgotten ack (a refusal made on its instance since, which
// left at once) neither rides nor is flushed.
TEST(deferred_acks, a_waiting_ack_rides_a_forgotten_one_does_not) {
  acks off(settings(16, true, false));
  off.add(1, 3);
  EXPECT_FALSE(off.may_ride());
  acks a(settings(16, true));
  a.add(1, 3);
  a.add(1, 4);
  a.add(1, 5);
  a.forget(1, 3);
  a.forget(1, 9);  // none waits there: nothing changes
  ASSERT_TRUE(a.may_ride());
  uint32_t instance = 99;
  EXPECT_FALSE(a.take_rider(2, instance)) << "peer 2 has none";
  ASSERT_TRUE(a.take_rider(1, instance));
  EXPECT_EQ(instance, 4u);
  launched l;
  a.flush_all(l.launcher());
  EXPECT_EQ(l.acks, (std::set<slot>{{1, 5}}));
  EXPECT_TRUE(a.empty());
  EXPECT_FALSE(a.may_ride());
}

// A poll that handled packets without using its whole budget leaves the
// acks to ride; the next poll launches them before it takes packets.
TEST(deferred_acks, outside_a_stream_the_next_poll_launches_all) {
  acks a(settings(16, true));
  add(a, 1, 0, 1);
  launched during;
  a.after_receive(1, false, during.launcher());
  EXPECT_TRUE(during.acks.empty()) << "it may still ride on a request";
  launched next;
  a.before_receive(next.launcher());
  EXPECT_EQ(next.acks, (std::set<slot>{{1, 0}}));
  EXPECT_TRUE(a.empty());
}

// A poll that took nothing launches every waiting ack at its end.
TEST(deferred_acks, a_poll_that_took_nothing_launches_all) {
  acks a(settings(16, true));
  add(a, 1, 0, 1);
  add(a, 2, 0, 3);
  launched l;
  a.after_receive(0, false, l.launcher());
  EXPECT_EQ(l.acks.size(), 4u);
  EXPECT_EQ(l.calls, 2);
  EXPECT_TRUE(a.empty());
}

// In a stream (each poll used its whole budget) only the rows holding
// ack_threshold(D) acks leave, together, and nothing leaves before the
// next poll takes packets.
TEST(deferred_acks, in_a_stream_only_rows_that_are_due_leave) {
  const uint32_t due = am::ack_threshold(16);
  ASSERT_EQ(due, 4u);
  acks a(settings(16, true));
  launched first;
  add(a, 1, 0, due - 1);
  a.after_receive(1, true, first.launcher());
  EXPECT_TRUE(first.acks.empty()) << "3 of 4 wait";
  add(a, 1, due - 1, 1);
  add(a, 2, 0, 1);
  launched before;
  a.before_receive(before.launcher());
  EXPECT_TRUE(before.acks.empty()) << "a stream: nothing leaves before the packets";
  launched second;
  a.after_receive(1, true, second.launcher());
  EXPECT_EQ(second.acks, (std::set<slot>{{1, 0}, {1, 1}, {1, 2}, {1, 3}}));
  EXPECT_FALSE(a.empty()) << "peer 2's one ack is not due";
  // The stream ends (a quiet poll): the next poll launches the rest first.
  a.quiet_poll();
  launched after;
  a.before_receive(after.launcher());
  EXPECT_EQ(after.acks, (std::set<slot>{{2, 0}}));
}

// Without multi_ack there is no stream: a full poll does not hold acks
// back for rows to fill (they left behind the requests instead).
TEST(deferred_acks, without_multi_ack_a_full_poll_is_no_stream) {
  acks a(settings(16, false));
  add(a, 1, 0, 1);
  launched l;
  a.after_receive(1, true, l.launcher());
  EXPECT_TRUE(l.acks.empty());
  a.before_receive(l.launcher());
  EXPECT_EQ(l.acks, (std::set<slot>{{1, 0}}));
}

// An ack of a row that never becomes due waits at most ack_hold_polls
// polls of a stream that launch only other rows (or none), counted after
// the poll that made it: it leaves at the start of the ack_hold_polls-th.
TEST(deferred_acks, a_row_not_due_waits_at_most_the_hold) {
  acks a(settings(64, true));
  launched l;
  // A poll of peer 1's stream, whose row fills and leaves at its end; it
  // takes peer 2's one request too when `with_peer_2` (instance i).
  auto stream_poll = [&a, &l](bool with_peer_2, uint32_t i) {
    a.before_receive(l.launcher());
    if (with_peer_2) a.add(2, i);
    add(a, 1, 0, am::ack_threshold(64));
    a.after_receive(1, true, l.launcher());
  };
  stream_poll(true, 0);
  uint32_t polls = 0;
  while (l.acks.count({2, 0}) == 0 && polls < 100) {
    stream_poll(false, 0);
    ++polls;
  }
  EXPECT_EQ(polls, am::ack_hold_polls);
  EXPECT_TRUE(a.empty());
  // The count starts again once every row has left.
  stream_poll(true, 1);
  for (uint32_t i = 0; i + 1 < am::ack_hold_polls; ++i) stream_poll(false, 0);
  EXPECT_EQ(l.acks.count({2, 1}), 0u);
  stream_poll(false, 0);
  EXPECT_EQ(l.acks.count({2, 1}), 1u);
}

// A ping-pong: each poll takes one request (a full budget of one: a
// stream), whose ack waits and rides on the answer sent before the next
// poll. No ack ever waits past its own poll, so none is launched alone:
// the hold counts the polls since an ack last waited, not since a flush.
TEST(deferred_acks, acks_that_ride_restart_the_hold) {
  acks a(settings(16, true));
  launched l;
  for (uint32_t round = 0; round < 4 * am::ack_hold_polls; ++round) {
    a.before_receive(l.launcher());
    a.add(1, round % 16);  // the request taken
    a.after_receive(1, true, l.launcher());
    uint32_t instance = 99;
    ASSERT_TRUE(a.take_rider(1, instance)) << "round " << round;  // the answer carries it
    EXPECT_EQ(instance, round % 16);
  }
  EXPECT_EQ(l.calls, 0) << "an ack that could ride was launched alone";
  // An ack that stays is still launched after the hold: at the start of
  // the ack_hold_polls-th poll after the one that made it.
  a.before_receive(l.launcher());
  a.add(1, 0);
  a.after_receive(1, true, l.launcher());
  for (uint32_t i = 0; i + 1 < am::ack_hold_polls; ++i) {
    a.before_receive(l.launcher());
    a.after_receive(1, true, l.launcher());
  }
  EXPECT_EQ(l.calls, 0);
  a.before_receive(l.launcher());
  EXPECT_EQ(l.acks, (std::set<slot>{{1, 0}}));
  EXPECT_TRUE(a.empty());
}

// The sending half of a poll launches every waiting ack, stream or not.
TEST(deferred_acks, flush_all_launches_every_row) {
  acks a(settings(16, true));
  add(a, 1, 0, 2);
  a.after_receive(1, true, [](int, uint64_t) { FAIL() << "not due"; });
  add(a, 2, 7, 1);
  launched l;
  a.flush_all(l.launcher());
  EXPECT_EQ(l.acks, (std::set<slot>{{1, 0}, {1, 1}, {2, 7}}));
  EXPECT_TRUE(a.empty());
  launched none;
  a.flush_all(none.launcher());
  EXPECT_EQ(none.calls, 0);
}

// The hold ages the rows: at every half hold the rows whose acks waited at
// the last such point leave, the younger rows wait on for a request to
// ride on. An ack deferred just after an aging point, in another row, is
// not launched by the hold of an older one: it leaves half a hold later,
// or rides.
TEST(deferred_acks, an_ack_younger_than_half_the_hold_waits_on) {
  acks a(settings(64, true));
  constexpr uint32_t half = am::ack_hold_polls / 2;
  launched l;
  auto whole_poll = [&a, &l] {
    a.before_receive(l.launcher());
    a.after_receive(1, true, l.launcher());
  };
  a.before_receive(l.launcher());  // poll 0 makes the old ack
  add(a, 2, 0, 1);
  a.after_receive(1, true, l.launcher());
  uint32_t poll = 1;
  for (; poll < half; ++poll) whole_poll();
  a.before_receive(l.launcher());  // poll `half` begins at the first aging point
  a.add(1, 7);                     // and makes the young ack
  a.after_receive(1, true, l.launcher());
  for (++poll; poll < am::ack_hold_polls; ++poll) whole_poll();
  EXPECT_TRUE(l.acks.empty());
  a.before_receive(l.launcher());  // the second aging point
  EXPECT_EQ(l.acks, (std::set<slot>{{2, 0}})) << "only the old ack's hold is over";
  a.after_receive(1, true, l.launcher());
  for (++poll; poll < am::ack_hold_polls + half; ++poll) whole_poll();
  EXPECT_EQ(l.acks.count({1, 7}), 0u);
  a.before_receive(l.launcher());  // ack_hold_polls polls after the one that made it
  EXPECT_EQ(l.acks.count({1, 7}), 1u) << "never more than the whole hold";
  EXPECT_TRUE(a.empty());
}

TEST(deferred_acks, waiting_when_idle_comes_from_the_configuration) {
  EXPECT_FALSE(deferred_acks(settings(16, true)).wait_when_idle());
  EXPECT_TRUE(deferred_acks(settings(16, true, true, true)).wait_when_idle());
  auto c = settings(16, true, true, true);
  c.defer_acks = false;
  EXPECT_FALSE(deferred_acks(c).wait_when_idle()) << "acks launched at once never wait";
}

// acks_wait_when_idle: neither the next poll's start nor a poll that took
// nothing launches the acks; they wait for a request (or their row comes
// due, or the hold ends), as in a stream.
TEST(deferred_acks, waiting_when_idle_an_idle_poll_launches_only_what_is_due) {
  acks a(settings(16, true, true, true));
  a.add(1, 0);
  launched l;
  for (uint32_t i = 0; i + 1 < am::ack_hold_polls; ++i) {
    a.before_receive(l.launcher());
    a.after_receive(0, false, l.launcher());
  }
  EXPECT_TRUE(l.acks.empty()) << "launched by an idle poll";
  add(a, 2, 0, am::ack_threshold(16));  // a row due leaves at once
  a.before_receive(l.launcher());
  a.after_receive(0, false, l.launcher());
  EXPECT_EQ(l.acks.size(), am::ack_threshold(16) + 1) << "peer 2's due row, and peer 1's hold over";
  EXPECT_TRUE(a.empty());
}

// Four processes taking turns on the cores, from process 0's view of a
// recursive-doubling allreduce: each operation receives from peer 1, sends
// to peer 2, receives from peer 2 (polls in between find nothing), then
// the next operation sends to peer 1. Waiting when idle, every ack rides
// on the next operation's request; launching at idle polls, two acks a
// operation go alone.
uint32_t lone_acks_in_allreduce(bool wait_when_idle) {
  acks a(settings(16, true, true, wait_when_idle));
  uint32_t alone = 0, rode = 0;
  auto count = [&alone](int, uint64_t waiting) {
    alone += static_cast<uint32_t>(__builtin_popcountll(waiting));
  };
  auto idle_poll = [&] {
    a.before_receive(count);
    a.after_receive(0, false, count);
  };
  auto take_from = [&](int peer, uint32_t instance) {
    a.before_receive(count);
    a.add(peer, instance);
    a.after_receive(1, true, count);
  };
  auto send_to = [&](int peer) {
    uint32_t instance = 0;
    if (a.may_ride() && a.take_rider(peer, instance)) ++rode;
  };
  constexpr uint32_t ops = 100;
  for (uint32_t op = 0; op < ops; ++op) {
    send_to(1);
    idle_poll();
    take_from(1, op % 16);
    send_to(2);
    idle_poll();
    idle_poll();
    take_from(2, op % 16);
  }
  const uint32_t alone_in_the_loop = alone;
  a.flush_all(count);
  EXPECT_EQ(alone + rode, 2 * ops) << "every ack rides or is launched, once";
  return alone_in_the_loop;
}

TEST(deferred_acks, waiting_when_idle_a_collective_launches_no_ack_alone) {
  EXPECT_EQ(lone_acks_in_allreduce(true), 0u);
  EXPECT_GE(lone_acks_in_allreduce(false), 100u) << "the case the setting is for";
}

}  // namespace
}  // namespace hpam::test
