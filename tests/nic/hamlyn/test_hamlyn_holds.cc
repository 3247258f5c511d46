// Direct deposits' and fast-mode arrivals' holds (layout.hpp, hold_line): a
// sender that carries a deposit out itself, or does a fast-mode arrival's
// work, announces it in its hold line of the destination's card with plain
// stores, and the owner's revoke runs the global barrier and waits for the
// lines; with hold lines off, the same deposits hold by slot::users. Either
// way, once revoke returns not one more byte lands. A fast-mode arrival
// held by a line is counted there, and the card's totals stay exact.
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

// A direct deposit checks a slot's fields once per set-up and keeps them
// (receiving_interface::direct_window, with hold lines): a rekey refuses the
// old key at once, and a slot released and set up again at the same index,
// smaller and elsewhere, is checked afresh, never by the copy kept before.
TEST_P(direct_holds, a_slot_set_up_again_is_checked_afresh) {
  hamlyn_job j(2, [&](card_config& c) { c.direct_holds = GetParam(); });
  guarded_area a(j[1], 4096);
  guarded_area b(j[1], 256);
  const uint32_t s = slot_over(j[1], a);
  const uint64_t key = j[1].slots().slot_at(s).protection_key.load();
  ASSERT_TRUE(put_direct(j, s, key, a.bytes, 1));
  ASSERT_TRUE(put_direct(j, s, key, a.bytes, 2)) << "the slot as kept";
  EXPECT_EQ(a.memory[a.bytes - 1], std::byte{2});

  const uint64_t new_key = key ^ 0x5A5A5A5A5A5A5A5Aull;
  ASSERT_EQ(j[1].slots().rekey(s, new_key), status::ok);
  const arrival_totals before = j[1].arrivals();
  EXPECT_FALSE(put_direct(j, s, key, 8, 3)) << "the old key, after a rekey";
  EXPECT_EQ(j[1].arrivals().key_rejections, before.key_rejections + 1);
  EXPECT_TRUE(put_direct(j, s, new_key, 8, 4));
  EXPECT_EQ(a.memory[0], std::byte{4});

  ASSERT_EQ(j[1].slots().release_slot(s), status::ok);
  ASSERT_EQ(slot_over(j[1], b), s) << "set up again at the same index";
  const uint64_t key2 = j[1].slots().slot_at(s).protection_key.load();
  EXPECT_FALSE(put_direct(j, s, key2, a.bytes, 5)) << "the old bound";
  EXPECT_EQ(j[1].arrivals().bounds_rejections, before.bounds_rejections + 1);
  EXPECT_TRUE(put_direct(j, s, key2, b.bytes, 6));
  EXPECT_EQ(b.memory[0], std::byte{6});
  EXPECT_EQ(b.memory[b.bytes - 1], std::byte{6});
  EXPECT_EQ(a.memory[0], std::byte{4}) << "nothing more in the old area";
  EXPECT_EQ(a.memory[a.bytes - 1], std::byte{2});
  EXPECT_TRUE(a.guards_intact());
  EXPECT_TRUE(b.guards_intact());
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

// A sender that died inside a deposit (its hold never let go) keeps revoke
// waiting for its time-out (2 s from the first look that found the hold),
// then revoke says so; a hold let go meanwhile ends the wait early.
TEST(direct_holds, revoke_gives_up_on_a_hold_never_let_go) {
  hamlyn_job j(2);
  guarded_area a(j[1], 256);
  const uint32_t s = slot_over(j[1], a);
  slot& sl = j[0].view(1).slots[s];  // as a sender sees it
  sl.users.fetch_add(1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(j[1].slots().revoke(s), status::would_block);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  sl.users.fetch_sub(1);
  EXPECT_EQ(j[1].slots().revoke(s), status::ok) << "nothing inside now";
}

// A fast-mode slot over all of `a` on card c: its index.
uint32_t fast_slot_over(card& c, const guarded_area& a) {
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.mode = slot_mode::fast;
  spec.metadata_count = 0;
  uint32_t s = ~0u;
  EXPECT_EQ(c.slots().create_slot(spec, s), status::ok);
  return s;
}

// Fast-mode arrivals (arrive_fast, the AM card's every packet) hold the
// slot as direct deposits do: by the arrival word of the sender's hold
// line where the card offers lines (no locked instruction per packet),
// else by slot::users. Either way, once revoke returns not one more byte
// lands, and every hold has been let go.
class fast_arrival_holds : public ::testing::TestWithParam<bool> {};

// A job of `nprocs` cards with hold lines on or off (`lines`), and a
// fast-mode slot on card 1 over an area of `bytes`, with its ticket.
struct fast_slot_job {
  const bool offered;  // lines on, and offered (the kernel runs the global barriers)
  hamlyn_job j;
  guarded_area a;
  const uint32_t s;
  const ticket t;
  fast_slot_job(int nprocs, bool lines, uint64_t bytes)
      : offered(lines && sys::global_barriers_available()),
        j(nprocs,
          [&](card_config& c) {
            c.direct_holds = lines;
            c.packet_size = 256;
            c.notify_capacity = 1024;
          }),
        a(j[1], bytes),
        s(fast_slot_over(j[1], a)),
        t(j[1].slots().make_ticket(s, fast_index, 0, a.bytes, true)) {}
};

TEST_P(fast_arrival_holds, nothing_lands_after_revoke_returns) {
  fast_slot_job f(2, GetParam(), 192);
  hamlyn_job& j = f.j;
  const guarded_area& a = f.a;
  const uint32_t s = f.s;
  const ticket t = f.t;
  const bool offered = f.offered;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> landed{0};
  std::thread sender([&] {
    std::vector<std::byte> data(a.bytes);
    for (uint8_t k = 1; !stop.load(std::memory_order_relaxed); ++k) {
      std::memset(data.data(), k, data.size());
      send_handle h;
      if (j[0].terminus().send_fast(t, 0, data.data(), static_cast<uint32_t>(data.size()), k, h) !=
          status::ok)
        break;
      landed.fetch_add(1, std::memory_order_relaxed);
    }
  });
  expect_nothing_lands_after_revoke(j[1], a, s, sender, landed, 1000, stop);
  EXPECT_EQ(j[1].slots().slot_at(s).users.load(), 0u) << "every hold let go";
  if (offered) {
    EXPECT_EQ(j[0].view(1).holds[0].arrival_plus_one.load(), 0u) << "my line names nothing";
    EXPECT_EQ(j[0].view(1).holds[0].slot_plus_one.load(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(lines_or_users, fast_arrival_holds, ::testing::Bool());

// A fast-mode arrival and a direct deposit hold by a word each of the
// sender's line: a revoke waits for an arrival word that names the slot,
// and a direct deposit of the same sender (to another slot) neither
// clears it nor is cleared by it.
TEST(fast_arrival_holds, an_arrival_word_and_a_direct_hold_are_apart) {
  if (!sys::global_barriers_available()) GTEST_SKIP() << "no global barriers: no hold lines";
  hamlyn_job j(2);
  ASSERT_NE(j[0].view(1).holds, nullptr);
  guarded_area a(j[1], 256);
  const uint32_t fast = fast_slot_over(j[1], a);
  const uint32_t plain = slot_over(j[1], a);
  hold_line& mine = j[0].view(1).holds[0];
  mine.arrival_plus_one.store(fast + 1);  // as a sender inside arrive_fast
  EXPECT_TRUE(put_direct(j, plain, j[1].slots().slot_at(plain).protection_key.load(), 16, 7));
  EXPECT_EQ(mine.arrival_plus_one.load(), fast + 1) << "the direct deposit let go of its own word";
  EXPECT_EQ(mine.slot_plus_one.load(), 0u);
  const auto start = std::chrono::steady_clock::now();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    mine.arrival_plus_one.store(0);
  });
  EXPECT_EQ(j[1].slots().revoke(fast), status::ok);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  release.join();
}

// Fast-mode arrivals held by a hold line count their packet and message in
// that sender's line (plain stores, no locked add on the header's line all
// senders share); the card's totals add every line to the header's
// counters, exact with two senders at once, lines or users; refusals are
// counted in the header either way, and count no packet.
TEST_P(fast_arrival_holds, two_senders_are_counted_exactly) {
  fast_slot_job f(3, GetParam(), 64);
  hamlyn_job& j = f.j;
  const ticket t = f.t;
  ticket forged = t;
  forged.protection_key ^= 1;
  constexpr uint64_t each = 400;
  auto send = [&](int from) {
    const uint64_t word = static_cast<uint64_t>(from);
    const auto* data = reinterpret_cast<const std::byte*>(&word);
    for (uint64_t k = 0; k < each; ++k) {
      send_handle h;
      ASSERT_EQ(j[from].terminus().send_fast(t, 0, data, sizeof word, word, h), status::ok);
    }
    send_handle h;
    EXPECT_EQ(j[from].terminus().send_fast(forged, 0, data, sizeof word, word, h),
              status::rejected);
  };
  std::thread other(send, 2);
  send(0);
  other.join();
  const arrival_totals got = j[1].arrivals();
  EXPECT_EQ(got.packets, 2 * each);
  EXPECT_EQ(got.messages, 2 * each);
  EXPECT_EQ(got.key_rejections, 2u);
  const arrival_counters& header = j[1].view(1).header->counters;
  EXPECT_EQ(header.key_rejections.load(), 2u);
  if (f.offered) {
    for (int from : {0, 2}) {
      EXPECT_EQ(j[1].view(1).holds[from].fast_arrivals.load(), each) << from;
    }
    EXPECT_EQ(header.packets.load(), 0u) << "counted in the senders' lines";
    EXPECT_EQ(header.messages.load(), 0u);
  } else {
    EXPECT_EQ(header.packets.load(), 2 * each);
    EXPECT_EQ(header.messages.load(), 2 * each);
  }
  uint64_t from[3] = {};
  notification n;
  while (j[1].receiver().receive(0, n)) ++from[n.source % 3];
  EXPECT_EQ(from[0], each);
  EXPECT_EQ(from[2], each);
  EXPECT_EQ(from[1], 0u);
}

// The hold lines lie at the end of the area memory (the card's own
// structure), so the clients' allocations start at its beginning.
TEST(direct_holds, lines_lie_at_the_end_of_the_area) {
  if (!sys::global_barriers_available()) GTEST_SKIP() << "no global barriers: no hold lines";
  hamlyn_job j(3);
  const card_header& h = *j[1].view(1).header;
  EXPECT_EQ(h.direct_holds, h.area_offset + h.area_bytes - 3 * sizeof(hold_line));
  uint64_t at = 1;
  EXPECT_EQ(j[1].slots().allocate_area(64, at), status::ok);
  EXPECT_EQ(at, 0u);
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
