// The hamlyn_manager: dispatch of notification entries to end points
// (entries for no end point, or naming metadata a slot does not have, are
// counted and dropped; an end point without room has its entry kept), and
// seeds checked like tickets (forged, stale, mismatched: refused, counted).
#include <gtest/gtest.h>

#include <memory>

#include "hamlyn_lib/datagram.hpp"
#include "hamlyn_lib/tagged_write.hpp"
#include "lib_fixture.hpp"

namespace hpam::test {
namespace {

using namespace hamlyn_lib;
namespace hw = nic::hamlyn;

TEST(hamlyn_manager, an_idle_poll_dispatches_nothing_and_a_wait_times_out) {
  hamlyn_job j(1);
  hamlyn_manager m(j[0]);
  EXPECT_FALSE(m.poll_nowait());
  EXPECT_FALSE(m.wait_until([] { return false; }, 2'000'000));
  EXPECT_EQ(m.counters().dispatched, 0u);
  EXPECT_THROW(hamlyn_manager(j[0], 7), std::invalid_argument);
}

TEST(hamlyn_manager, entries_for_no_end_point_or_no_metadata_entry_are_counted_and_dropped) {
  hamlyn_job j(1);
  hamlyn_manager m(j[0]);
  datagram_receiver r(m, 2, 64);
  const seed s = r.make_seed();
  // A slot with no end point, a slot past the table, a metadata index the
  // end point's slot does not have.
  EXPECT_TRUE(m.dispatch(hw::notification{s.target.slot + 1, 0, 0, 0, 0}, nullptr));
  EXPECT_TRUE(m.dispatch(hw::notification{1u << 30, 0, 0, 0, 0}, nullptr));
  EXPECT_TRUE(m.dispatch(hw::notification{s.target.slot, 2, 0, 0, 0}, nullptr));
  EXPECT_EQ(m.counters().stray, 2u);
  EXPECT_EQ(m.counters().malformed, 1u);
  EXPECT_EQ(m.counters().dispatched, 0u);
  EXPECT_FALSE(r.ready(0));
  EXPECT_FALSE(r.ready(1));
}

TEST(hamlyn_manager, an_end_point_without_room_has_its_entry_kept_and_nothing_is_lost) {
  hamlyn_job j(2);
  hamlyn_manager rm(j[1]), sm(j[0]);
  tagged_write_receiver r(rm, 4096, 4);  // room for 4 tags
  tagged_write_sender w;
  ASSERT_EQ(w.open(sm, r.make_seed()), status::ok);
  const uint64_t word = 0;
  for (uint64_t tag = 0; tag < 10; ++tag) ASSERT_EQ(w.send(&word, 8, tag * 8, tag), status::ok);
  for (int i = 0; i < 10; ++i) (void)rm.poll_nowait();  // nobody takes tags meanwhile
  EXPECT_EQ(r.queued(), 4u);
  std::vector<uint64_t> got;
  uint64_t tag;
  for (int polls = 0; polls < 100 && got.size() < 10; ++polls)
    while (r.get_tag(tag)) got.push_back(tag);
  ASSERT_EQ(got.size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], i);  // one sender, fast mode: in order here
  EXPECT_GT(rm.counters().deferred, 0u);
  EXPECT_EQ(rm.counters().dispatched, 10u);
  EXPECT_EQ(j[1].view(1).queue(0)->overruns.load(), 0u);
}

// --- seeds ---------------------------------------------------------------

using seed_case = two_managers;

TEST_F(seed_case, a_true_seed_is_accepted) {
  datagram_receiver r(rm, 4, 128);
  datagram_sender s;
  EXPECT_EQ(s.open(sm, r.make_seed()), status::ok);
  EXPECT_EQ(sm.counters().seeds_refused, 0u);
}

TEST_F(seed_case, forged_seeds_are_refused_and_counted) {
  datagram_receiver r(rm, 4, 128);
  const seed good = r.make_seed();
  std::vector<seed> forged;
  auto forge = [&](auto&& change) {
    seed s = good;
    change(s);
    forged.push_back(s);
  };
  forge([](seed& s) { s.target.protection_key ^= 1; });  // wrong key
  forge([](seed& s) { s.target.protection_key = 0; });   // no key
  forge([](seed& s) { s.target.generation++; });         // another setup of the slot
  forge([](seed& s) { s.target.slot ^= 1; });            // another slot
  forge([](seed& s) { s.target.slot = 1u << 20; });      // no such slot
  forge([](seed& s) { s.target.node = 9; });             // no such process
  forge([](seed& s) { s.target.range += 1; });           // past the slot's bound
  forge([](seed& s) { s.target.offset = ~0ull; });       // offset overflows
  forge([](seed& s) { s.entries = 5; });                 // more entries than the slot has
  forge([](seed& s) { s.target.metadata_index = 1; });   // entries 1..4 of a 4-entry slot
  forge([](seed& s) { s.entry_bytes = 1u << 30; });      // instances past the range
  forge([](seed& s) { s.magic ^= 1; });                  // not a seed
  forge([](seed& s) { s.version++; });                   // another layout
  forge([](seed& s) { s.kind = static_cast<uint32_t>(protocol::stream); });  // another protocol
  forge([](seed& s) { s.reserved = 1; });
  for (size_t i = 0; i < forged.size(); ++i) {
    datagram_sender s;
    EXPECT_EQ(s.open(sm, forged[i]), status::rejected) << "forgery " << i;
    EXPECT_EQ(s.send(0, "x", 1), status::invalid_argument) << "a refused sender sends nothing";
  }
  EXPECT_EQ(sm.counters().seeds_refused, forged.size());
  // A tagged-write sender on a datagram seed (and the reverse) is refused too.
  tagged_write_sender t;
  EXPECT_EQ(t.open(sm, good), status::rejected);
  tagged_write_receiver tr(rm, 4096);
  datagram_sender d;
  seed ts = tr.make_seed();
  EXPECT_EQ(d.open(sm, ts), status::rejected);
  ts.kind = static_cast<uint32_t>(protocol::datagram);
  ts.entries = 1;
  ts.entry_bytes = 64;
  EXPECT_EQ(d.open(sm, ts), status::rejected);  // a fast-mode slot is no datagram slot
  EXPECT_EQ(sm.counters().seeds_refused, forged.size() + 3);
}

TEST_F(seed_case, a_stale_seed_is_refused_and_its_old_sender_is_refused_by_the_card) {
  auto r = std::make_unique<datagram_receiver>(rm, 2, 64);
  const seed old = r->make_seed();
  datagram_sender before;
  ASSERT_EQ(before.open(sm, old), status::ok);
  r.reset();  // the end point is gone: its slot freed
  datagram_sender after;
  EXPECT_EQ(after.open(sm, old), status::rejected);
  // A new end point may get the same slot: a new generation and key.
  datagram_receiver again(rm, 2, 64);
  EXPECT_EQ(after.open(sm, old), status::rejected);
  EXPECT_EQ(sm.counters().seeds_refused, 2u);
  // The sender built before keeps its old ticket: the card refuses it.
  const uint64_t keys = j[1].arrivals().key_rejections + j[1].arrivals().revoked_rejections;
  EXPECT_EQ(before.send(0, "stale", 5), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections + j[1].arrivals().revoked_rejections, keys + 1);
  datagram d;
  EXPECT_FALSE(again.receive(0, d));
}

}  // namespace
}  // namespace hpam::test
