// ack_rows (am/ack_rows.hpp): deferred acknowledgements per peer. Every ack
// deferred is launched exactly once, by riding on a request to its own
// peer or by a flush, never lost and never twice; one forgotten (a refusal
// made on its instance left at once instead) neither rides nor is flushed.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "am/ack_rows.hpp"

namespace hpam::test {
namespace {

using am::ack_rows;
using slot = std::pair<int, uint32_t>;  // [peer][instance]

// ack_rows with the endpoint's part played: each ack deferred gets a word
// of its own (a new sequence), kept per slot as the reply descriptors keep
// the stored acks, and every rider taken must carry its slot's latest word.
struct rows : ack_rows {
  std::map<slot, uint32_t> stored;  // [peer][instance] -> the latest ack's word there
  uint32_t made = 0;
  auto words(int peer) {
    return [this, peer](uint32_t i) { return stored.at({peer, i}); };
  }
  void defer(int peer, uint32_t instance) {
    stored[{peer, instance}] = ++made;
    ack_rows::defer(peer, instance, made);
  }
  void restamp(int peer, uint32_t instance) {
    stored[{peer, instance}] = ++made;
    ack_rows::restamp(peer, instance, made);
  }
  void forget(int peer, uint32_t instance) { ack_rows::forget(peer, instance, words(peer)); }
  bool take_rider(int peer, uint32_t& instance) {
    am::ack_entry e{};
    if (!ack_rows::take_rider(peer, e, words(peer))) return false;
    EXPECT_EQ(e.sequence, stored.at({peer, e.instance})) << "a rider carries its slot's latest ack";
    instance = e.instance;
    return true;
  }
};

// Every ack a flush launches, one slot per waiting bit.
void collect(std::multiset<slot>& out, int peer, uint64_t waiting) {
  for (uint64_t w = waiting; w != 0; w &= w - 1)
    out.insert({peer, static_cast<uint32_t>(__builtin_ctzll(w))});
}

std::multiset<slot> flushed(ack_rows& a) {
  std::multiset<slot> out;
  a.flush_all([&](int peer, uint64_t w) { collect(out, peer, w); });
  return out;
}

// Flushes only the rows holding at least `due` acks.
std::multiset<slot> flushed_due(ack_rows& a, uint32_t due) {
  std::multiset<slot> out;
  a.flush([due](uint32_t n) { return n >= due; },
          [&](int peer, uint64_t w) { collect(out, peer, w); });
  return out;
}

TEST(ack_rows, every_ack_rides_or_flushes_exactly_once) {
  constexpr int nprocs = 5;
  rows a;
  a.resize(nprocs);
  std::set<slot> deferred;
  for (int p = 0; p < nprocs; ++p)
    for (uint32_t i : {0u, 3u, 17u, 63u})
      if ((p + i) % 3 != 0) {
        a.defer(p, i);
        deferred.insert({p, i});
      }
  EXPECT_EQ(a.waiting(), deferred.size());
  std::multiset<slot> launched;
  // Two requests to peer 1 and one to peer 4 carry one ack each, of their own peer.
  for (int dest : {1, 1, 4}) {
    uint32_t i = 99;
    ASSERT_TRUE(a.take_rider(dest, i));
    EXPECT_FALSE(a.waits(dest, i));
    launched.insert({dest, i});
  }
  EXPECT_EQ(a.waiting(), deferred.size() - 3);
  for (const slot& s : flushed(a)) launched.insert(s);
  EXPECT_EQ(launched.size(), deferred.size());                            // none twice
  EXPECT_EQ(std::set<slot>(launched.begin(), launched.end()), deferred);  // none lost
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(flushed(a).empty());  // a second flush launches nothing
}

TEST(ack_rows, rider_comes_only_from_the_destination_row) {
  rows a;
  a.resize(3);
  a.defer(2, 5);
  uint32_t i = 99;
  EXPECT_FALSE(a.take_rider(0, i));
  EXPECT_FALSE(a.take_rider(1, i));
  ASSERT_TRUE(a.take_rider(2, i));
  EXPECT_EQ(i, 5u);
  EXPECT_FALSE(a.take_rider(2, i));
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(flushed(a).empty());
}

// Requests arrive in launch order, which wraps around the instances (D = 8:
// 6, 7, then 0, 1): riders go oldest first, not lowest instance first (an
// answer to a later request arriving first tells the sender of a loss).
TEST(ack_rows, riders_go_in_launch_order_across_the_wrap) {
  rows a;
  a.resize(2);
  for (uint32_t inst : {6u, 7u, 0u, 1u}) a.defer(1, inst);
  for (uint32_t want : {6u, 7u, 0u, 1u}) {
    uint32_t i = 99;
    ASSERT_TRUE(a.take_rider(1, i));
    EXPECT_EQ(i, want);
  }
  EXPECT_TRUE(a.empty());
  a.defer(1, 2);  // a new oldest once the row is empty
  a.defer(1, 3);
  uint32_t i = 99;
  ASSERT_TRUE(a.take_rider(1, i));
  EXPECT_EQ(i, 2u);
}

TEST(ack_rows, a_forgotten_ack_neither_rides_nor_is_flushed) {
  rows a;
  a.resize(2);
  a.defer(1, 2);
  a.defer(1, 4);
  a.defer(1, 6);
  a.forget(1, 2);  // the oldest: the rider is looked for from there on
  a.forget(1, 3);  // none waits there: nothing changes
  EXPECT_EQ(a.waiting(), 2u);
  EXPECT_EQ(a.count(1), 2u);
  uint32_t i = 99;
  ASSERT_TRUE(a.take_rider(1, i));
  EXPECT_EQ(i, 4u);
  EXPECT_EQ(flushed(a), (std::multiset<slot>{{1, 6}}));
  EXPECT_TRUE(a.empty());
}

// A resent copy of a request whose ack waits changes the ack's word (its
// flag): the rider carries the new one, whether it was the row's next rider
// then or became it later.
TEST(ack_rows, a_restamped_ack_rides_with_its_new_word) {
  rows a;
  a.resize(2);
  a.defer(1, 2);
  a.defer(1, 4);
  a.restamp(1, 2);  // the oldest: the next rider
  a.restamp(1, 4);  // behind it
  a.restamp(1, 5);  // none waits there: nothing changes
  uint32_t i = 99;
  ASSERT_TRUE(a.take_rider(1, i));  // take_rider checks the word
  EXPECT_EQ(i, 2u);
  ASSERT_TRUE(a.take_rider(1, i));
  EXPECT_EQ(i, 4u);
  EXPECT_TRUE(a.empty());
}

TEST(ack_rows, deferring_a_waiting_slot_again_counts_once) {
  rows a;
  a.resize(2);
  a.defer(1, 7);
  a.defer(1, 7);  // the slot's stored ack made again (a new one on that instance)
  EXPECT_EQ(a.waiting(), 1u);
  EXPECT_EQ(a.count(1), 1u);
  uint32_t i = 99;
  ASSERT_TRUE(a.take_rider(1, i));
  EXPECT_EQ(i, 7u);
  EXPECT_FALSE(a.take_rider(1, i));
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(flushed(a).empty());
}

TEST(ack_rows, a_row_refilled_after_a_ride_is_still_flushed) {
  rows a;
  a.resize(4);
  std::map<slot, int> launches;
  uint32_t i = 99;
  for (int round = 0; round < 3; ++round) {
    a.defer(3, 1);
    ASSERT_TRUE(a.take_rider(3, i));  // the row empties but stays listed
    launches[{3, i}]++;
    a.defer(3, 1);  // and fills again before the flush
    a.defer(0, 0);
    for (const slot& s : flushed(a)) launches[s]++;
  }
  EXPECT_EQ(launches[slot(3, 1)], 6);
  EXPECT_EQ(launches[slot(0, 0)], 3);
  EXPECT_EQ(launches.size(), 2u);
}

// A partial flush (multi_ack) launches the full rows whole, keeps the
// others listed with their acks, and a later flush launches each of those
// exactly once; riders between the two come only from their own row.
TEST(ack_rows, a_partial_flush_keeps_the_rows_not_due) {
  rows a;
  a.resize(4);
  for (uint32_t i : {0u, 1u, 2u, 5u}) a.defer(1, i);
  a.defer(2, 3);
  a.defer(3, 9);
  a.defer(3, 10);
  EXPECT_EQ(a.count(1), 4u);
  EXPECT_EQ(a.count(3), 2u);
  EXPECT_EQ(flushed_due(a, 2),
            (std::multiset<slot>{{1, 0}, {1, 1}, {1, 2}, {1, 5}, {3, 9}, {3, 10}}));
  EXPECT_EQ(a.waiting(), 1u);
  EXPECT_TRUE(a.waits(2, 3));
  EXPECT_EQ(a.count(1), 0u);
  EXPECT_TRUE(flushed_due(a, 2).empty());  // still not due
  a.defer(1, 4);                           // a flushed row fills again: listed again
  uint32_t i = 99;
  ASSERT_TRUE(a.take_rider(2, i));
  EXPECT_EQ(i, 3u);
  EXPECT_EQ(flushed(a), (std::multiset<slot>{{1, 4}}));  // row 2 emptied by its rider
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(flushed(a).empty());
}

// A row's count follows defers, a repeated defer of the same instance,
// forgets, riders and flushes.
TEST(ack_rows, a_rows_count_follows_defers_riders_and_flushes) {
  rows a;
  a.resize(3);
  a.defer(2, 7);
  a.defer(2, 7);  // the same slot again: still one
  a.defer(2, 63);
  a.defer(2, 9);
  a.forget(2, 9);
  EXPECT_EQ(a.count(2), 2u);
  EXPECT_EQ(a.waiting(), 2u);
  uint32_t i = 0;
  ASSERT_TRUE(a.take_rider(2, i));
  EXPECT_EQ(i, 7u);  // the oldest
  EXPECT_EQ(a.count(2), 1u);
  EXPECT_TRUE(flushed_due(a, 2).empty());  // one waiting: not due at 2
  EXPECT_EQ(a.count(2), 1u);
  EXPECT_EQ(flushed(a), (std::multiset<slot>{{2, 63}}));
  EXPECT_EQ(a.count(2), 0u);
  EXPECT_TRUE(a.empty());
}

// The bits a flush hands over: every waiting ack of the row.
TEST(ack_rows, a_flush_hands_over_the_rows_bits) {
  rows a;
  a.resize(2);
  a.defer(1, 0);
  a.defer(1, 63);
  a.defer(1, 40);
  int rows = 0;
  a.flush_all([&](int peer, uint64_t w) {
    ++rows;
    EXPECT_EQ(peer, 1);
    EXPECT_EQ(w, (uint64_t{1} << 63) | (uint64_t{1} << 40) | 1u);
  });
  EXPECT_EQ(rows, 1);
}

// launch_aged: a row leaves at the second call after its acks began to
// wait, never at the first, with all its acks (the young ones too: one
// packet); a row the riders emptied in between starts young again, and
// is dropped from the list.
TEST(ack_rows, a_row_leaves_at_its_second_aging_unless_emptied) {
  rows a;
  a.resize(4);
  std::multiset<slot> out;
  auto age = [&] {
    out.clear();
    a.launch_aged([&](int peer, uint64_t w) { collect(out, peer, w); });
  };
  a.defer(1, 0);
  a.defer(2, 3);
  age();
  EXPECT_TRUE(out.empty()) << "no row had waited at the last call";
  a.defer(1, 1);  // younger, in an old row: goes with it
  a.defer(3, 5);
  uint32_t rider = 99;
  ASSERT_TRUE(a.take_rider(3, rider));  // peer 3's row emptied before it aged
  EXPECT_EQ(rider, 5u);
  age();
  EXPECT_EQ(out, (std::multiset<slot>{{1, 0}, {1, 1}, {2, 3}}));
  EXPECT_TRUE(a.empty());
  a.defer(3, 6);  // peer 3's row was emptied: young again
  age();
  EXPECT_TRUE(out.empty()) << "a row emptied by a rider kept its age";
  age();
  EXPECT_EQ(out, (std::multiset<slot>{{3, 6}}));
  // A row emptied by a rider after it aged starts young too.
  a.defer(2, 0);
  age();
  ASSERT_TRUE(a.take_rider(2, rider));
  a.defer(2, 1);
  age();
  EXPECT_TRUE(out.empty()) << "the rider's row kept its age";
  age();
  EXPECT_EQ(out, (std::multiset<slot>{{2, 1}}));
  EXPECT_TRUE(a.empty());
}

}  // namespace
}  // namespace hpam::test
