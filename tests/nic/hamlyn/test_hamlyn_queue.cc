// The notification queue on its own (notification_queue.hpp), in private
// memory: entries that carry a message (inline delivery: every length up to
// the room byte-exact, forged lengths and flags; compact entries), and when an idle reader
// finds a hole (a free entry writers went past) without reading the NQCB
// cursor at every poll.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../../common/test_util.hpp"
#include "nic/hamlyn/notification_queue.hpp"

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

// A queue in private memory (the layout of a card's, without the card),
// of entries of entry_bytes (128, 256 or 512: layout.hpp).
struct queue {
  static constexpr uint64_t cap = 8;
  notification_queue_control q{};
  std::vector<std::byte> storage;
  notification_ring ring;
  notification_reader r;
  explicit queue(uint32_t entry_bytes = min_notification_entry_bytes)
      : storage(cap * entry_bytes + 64) {
    // Entries on 64-byte boundaries, as in a card segment.
    auto at = reinterpret_cast<uintptr_t>(storage.data());
    ring = {storage.data() + ((64 - at % 64) % 64), static_cast<uint32_t>(cap), entry_bytes};
    notification_queue_init(q, ring);
  }
  notification_entry& entry(uint64_t c) { return ring.at(c); }
  bool append(const notification& n, const std::byte* m = nullptr) {
    return notification_append(q, ring, n, m);
  }
  bool take(notification& n, std::byte* m) { return notification_take(q, ring, r, n, m); }
};

// The entry sizes a card may have.
class hamlyn_queue_sizes : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(entry_bytes, hamlyn_queue_sizes, ::testing::Values(128u, 256u, 512u));

TEST_P(hamlyn_queue_sizes, the_entry_carries_every_length_up_to_its_room_byte_exact) {
  queue k(GetParam());
  const uint32_t room = notification_room(GetParam());
  EXPECT_EQ(k.ring.room(), room);
  for (uint32_t len = 0; len <= room; ++len) {
    const auto msg = bytes_of(len + 1, static_cast<uint8_t>(len));  // never a null pointer
    ASSERT_TRUE(k.append(notification{3, fast_index, 1, 0x77, len}, msg.data()));
    notification n;
    std::byte got[max_notification_inline_bytes + 16];
    std::memset(got, 0xEE, sizeof got);
    ASSERT_TRUE(k.take(n, got));
    EXPECT_TRUE(n.carried) << len;
    EXPECT_EQ(n.length, len);
    EXPECT_EQ(n.slot, 3u);
    EXPECT_EQ(n.source, 1u);
    EXPECT_EQ(n.metadata, 0x77u);
    EXPECT_EQ(std::memcmp(got, msg.data(), len), 0) << len;
    // A 128-byte entry's take copies its whole room (fixed moves); a longer
    // entry's the message alone.
    const size_t copied = room == notification_inline_bytes ? room : len;
    for (size_t i = copied; i < sizeof got; ++i)
      ASSERT_EQ(got[i], std::byte{0xEE}) << "the take wrote past the message or the room";
    // In place, the message lies in the entry's room, and the bytes after
    // the entry (the next one's flag) are untouched.
    ASSERT_TRUE(k.append(notification{3, fast_index, 1, 0x78, len}, msg.data()));
    const std::byte* in_place = nullptr;
    ASSERT_TRUE(notification_take_in_place(k.q, k.ring, k.r, n, in_place));
    EXPECT_TRUE(n.carried);
    EXPECT_EQ(in_place, entry_message(k.entry(k.r.cursor - 1)));
    EXPECT_EQ(std::memcmp(in_place, msg.data(), len), 0) << len;
    EXPECT_EQ(k.entry(k.r.cursor).wrap_flag.load(),
              encode_wrap_flag(k.r.cursor, entry_state::free));
  }
  EXPECT_EQ(k.r.malformed, 0u);
}

TEST_P(hamlyn_queue_sizes, a_message_longer_than_the_room_or_none_is_not_carried) {
  queue k(GetParam());
  const uint32_t room = notification_room(GetParam());
  const auto msg = bytes_of(room + 1, 5);
  ASSERT_TRUE(k.append(notification{1, fast_index, 0, 1, room + 1}, msg.data()));
  ASSERT_TRUE(k.append(notification{1, fast_index, 0, 2, 40}));  // no message given
  notification n;
  std::byte got[max_notification_inline_bytes];
  ASSERT_TRUE(k.take(n, got));
  EXPECT_FALSE(n.carried);
  EXPECT_EQ(n.length, room + 1);
  ASSERT_TRUE(k.take(n, got));
  EXPECT_FALSE(n.carried);
  EXPECT_EQ(n.metadata, 2u);
}

// After a forged entry (written by the test at the reader's cursor): an
// honest one carrying `room` bytes is appended, and the take (in place or
// copying) passes the forged one over and returns the honest one whole.
void the_honest_entry_after_is_taken(queue& k, bool in_place, uint32_t room) {
  const auto msg = bytes_of(room, 9);
  ASSERT_TRUE(k.append(notification{2, fast_index, 0, 42, room}, msg.data()));
  notification n;
  std::byte got[max_notification_inline_bytes];
  const std::byte* at = nullptr;
  ASSERT_TRUE(in_place ? notification_take_in_place(k.q, k.ring, k.r, n, at) : k.take(n, got));
  EXPECT_EQ(n.slot, 2u);
  EXPECT_TRUE(n.carried);
  EXPECT_EQ(std::memcmp(in_place ? at : got, msg.data(), room), 0);
}

// Any process mapping the card can write an entry. One that claims to carry
// more than an entry holds (one byte more, or far more), or has flags no
// writer sets, is passed over and counted, never copied past the room; the
// entries after it are taken. The same through the in-place take.
TEST_P(hamlyn_queue_sizes, a_forged_carried_length_or_flag_is_counted_and_passed_over) {
  const uint32_t room = notification_room(GetParam());
  for (bool in_place : {false, true}) {
    queue k(GetParam());
    struct forged {
      uint16_t flags;
      uint32_t length;
    };
    for (forged f : {forged{entry_flag_carried, 0xFFFFFFFFu}, forged{entry_flag_carried, room + 1},
                     forged{2, 8}, forged{entry_flag_carried | 4, 8}}) {
      const uint64_t c = k.r.cursor;
      notification_entry& e = k.entry(c);
      e.slot = 1;
      e.metadata_index = fast_index;
      e.length = f.length;
      e.flags = f.flags;
      e.wrap_flag.store(encode_wrap_flag(c, entry_state::written));
      k.q.cursor.store(c + 1);
      the_honest_entry_after_is_taken(k, in_place, room);
    }
    EXPECT_EQ(k.r.malformed, 4u);
    notification n;
    std::byte got[max_notification_inline_bytes];
    EXPECT_FALSE(k.take(n, got));
  }
}

// --- compact entries (layout.hpp): a carried message whose first 16 bytes
// its reader does not read (a headless fast-mode word) lies from the
// entry's first byte, those 16 bytes the entry's flag and fields.

// Every length from 16 to the room: written compact where that saves a
// line (its length modulo 64 is 0 or past 32), in the full form otherwise,
// taken by either take (and by the walk, past a hole) with its fields and
// the word whole, the message's bytes past its first 16 exact (all of them
// in the full form), nothing written past it.
TEST_P(hamlyn_queue_sizes, a_headless_message_goes_compact_where_that_saves_a_line) {
  queue k(GetParam());
  const uint32_t room = notification_room(GetParam());
  const uint64_t word = headless_word | 0xBEEF;
  for (uint32_t len = 16; len <= room; ++len) {
    const auto msg = bytes_of(len, static_cast<uint8_t>(len));
    for (int how = 0; how < 3; ++how) {                // copied, in place, in place past a hole
      if (how == 2) k.q.cursor.store(k.r.cursor + 1);  // a writer one ahead: a hole
      ASSERT_TRUE(k.append(notification{0xFFFF, fast_index, 65534, word, len}, msg.data()));
      const uint64_t c = k.r.cursor + (how == 2);
      const bool compact = len % 64 == 0 || len % 64 > 32;
      EXPECT_EQ(k.entry(c).wrap_flag.load(),
                encode_wrap_flag(c, compact ? entry_state::written_compact : entry_state::written))
          << len;
      notification n;
      std::byte got[max_notification_inline_bytes + 16];
      std::memset(got, 0xEE, sizeof got);
      const std::byte* at = nullptr;
      if (how == 0)
        ASSERT_TRUE(k.take(n, got)) << len;
      else
        ASSERT_TRUE(notification_take_in_place(k.q, k.ring, k.r, n, at)) << len;
      EXPECT_TRUE(n.carried);
      EXPECT_EQ(n.length, len);
      EXPECT_EQ(n.slot, 0xFFFFu);
      EXPECT_EQ(n.source, 65534u);
      EXPECT_EQ(n.metadata_index, fast_index);
      EXPECT_EQ(n.metadata, word);
      const std::byte* m = how == 0 ? got : at;
      if (how != 0) {
        EXPECT_EQ(at, compact ? reinterpret_cast<const std::byte*>(&k.entry(c))
                              : entry_message(k.entry(c)))
            << len;
      }
      const size_t from = compact ? 16 : 0;
      EXPECT_EQ(std::memcmp(m + from, msg.data() + from, len - from), 0) << len << " " << how;
      if (how == 0) {
        const size_t copied = room == notification_inline_bytes ? room : len;
        for (size_t i = copied; i < sizeof got; ++i)
          ASSERT_EQ(got[i], std::byte{0xEE}) << "the take wrote past the message or the room";
      }
      EXPECT_EQ(k.r.cursor, c + 1);
      EXPECT_EQ(k.entry(c + 1).wrap_flag.load(), encode_wrap_flag(c + 1, entry_state::free));
    }
  }
  EXPECT_EQ(k.r.malformed, 0u);
  EXPECT_EQ(k.r.holes, room - 15);
}

// Anything else goes in the full form, byte-exact: shorter than 16 bytes,
// a slot index or word beyond 16 bits, no headless bit, another bit above
// it, a length whose full form ends in the same line (72, 96 bytes).
TEST(hamlyn_queue, what_does_not_fit_goes_in_the_full_form) {
  queue k(512);
  struct c {
    uint32_t slot;
    uint64_t word;
    uint32_t len;
  };
  for (const c x : {c{1, headless_word, 15}, c{1, headless_word, 0}, c{0x10000, headless_word, 64},
                    c{1, headless_word | 0x10000, 64}, c{1, 5, 64}, c{1, headless_word << 1, 64},
                    c{1, headless_word | uint64_t{1} << 40, 64}, c{1, headless_word, 72},
                    c{1, headless_word, 96}}) {
    const auto msg = bytes_of(x.len + 1, 3);
    ASSERT_TRUE(k.append(notification{x.slot, fast_index, 1, x.word, x.len}, msg.data()));
    const uint64_t c0 = k.r.cursor;
    EXPECT_EQ(k.entry(c0).wrap_flag.load(), encode_wrap_flag(c0, entry_state::written));
    notification n;
    const std::byte* at = nullptr;
    ASSERT_TRUE(notification_take_in_place(k.q, k.ring, k.r, n, at));
    EXPECT_EQ(at, entry_message(k.entry(c0)));
    EXPECT_EQ(n.slot, x.slot);
    EXPECT_EQ(n.metadata, x.word);
    EXPECT_EQ(n.length, x.len);
    EXPECT_EQ(std::memcmp(at, msg.data(), x.len), 0);
  }
}

// A forged compact entry (any process mapping the card can write one)
// shorter than its 16 bytes of head or longer than the room is passed over
// and counted, by both takes; the honest entry after it is taken.
TEST_P(hamlyn_queue_sizes, a_forged_compact_length_is_counted_and_passed_over) {
  const uint32_t room = notification_room(GetParam());
  for (bool in_place : {false, true}) {
    queue k(GetParam());
    for (const uint64_t len : {uint64_t{0}, uint64_t{15}, uint64_t{room} + 1, uint64_t{0xFFFF}}) {
      const uint64_t c = k.r.cursor;
      const uint64_t f = compact_fields(1, 1, len, 7);
      std::memcpy(reinterpret_cast<std::byte*>(&k.entry(c)) + 8, &f, sizeof f);
      k.entry(c).wrap_flag.store(encode_wrap_flag(c, entry_state::written_compact));
      k.q.cursor.store(c + 1);
      the_honest_entry_after_is_taken(k, in_place, room);
    }
    EXPECT_EQ(k.r.malformed, 4u);
  }
}

// A compact entry behind a free one tells the reader the free one is a hole
// at once (detail::is_hole), as a full one does.
TEST(hamlyn_queue, a_compact_entry_shows_a_hole_at_once) {
  queue k(256);
  k.q.cursor.store(1);
  const auto msg = bytes_of(40, 2);
  ASSERT_TRUE(k.append(notification{1, fast_index, 0, headless_word | 9, 40}, msg.data()));
  notification n;
  std::byte got[max_notification_inline_bytes];
  ASSERT_TRUE(k.take(n, got));
  EXPECT_EQ(n.metadata, headless_word | 9);
  EXPECT_EQ(k.r.holes, 1u);
}

// A reader that set up no inline delivery passes no buffer: it is told the
// entry carried the message, and nothing is written for it.
TEST(hamlyn_queue, a_reader_without_a_buffer_is_told_but_given_nothing) {
  queue k;
  const auto msg = bytes_of(16, 1);
  ASSERT_TRUE(k.append(notification{1, fast_index, 0, 7, 16}, msg.data()));
  notification n;
  ASSERT_TRUE(k.take(n, nullptr));
  EXPECT_TRUE(n.carried);
  EXPECT_EQ(n.length, 16u);
}

// --- holes: free entries the writers went past (the NQCB cursor pointed
// ahead). An idle reader does not read the NQCB cursor at every poll
// (detail::is_hole); each case below is still found.

// A writer that found the NQCB cursor at `cursor` (ahead of the fresh
// reader's 0) appends a notification of this metadata word; the reader's
// first take must find it past the holes.
void append_past_holes_and_take(queue& k, uint64_t cursor, uint64_t metadata) {
  k.q.cursor.store(cursor);
  ASSERT_TRUE(k.append(notification{1, 0, 0, metadata, 8}));
  notification n;
  ASSERT_TRUE(k.take(n, nullptr));
  EXPECT_EQ(n.metadata, metadata);
}

// Writers take the first free entry from the cursor on: one that pointed
// one ahead leaves one hole, which the reader passes at its first look
// (the next entry is written).
TEST(hamlyn_queue, a_single_hole_is_passed_at_once) {
  queue k;
  ASSERT_NO_FATAL_FAILURE(append_past_holes_and_take(k, 1, 77));
  EXPECT_EQ(k.r.holes, 1u);
  EXPECT_EQ(k.r.cursor, 2u);
}

// A longer run: found when the reader looks at the NQCB cursor. A fresh
// reader is wary: it looks at its first idle take.
TEST(hamlyn_queue, a_fresh_reader_finds_a_run_of_holes_at_once) {
  queue k;
  ASSERT_NO_FATAL_FAILURE(append_past_holes_and_take(k, 5, 55));
  EXPECT_EQ(k.r.holes, 5u);
  EXPECT_EQ(k.r.wary, detail::wary_looks);
}

// Calms down after wary_looks looks that find the cursor in place; a calm
// reader looks once in hole_check_period idle takes at a cursor value, and
// is wary again as soon as it finds a hole.
TEST(hamlyn_queue, a_calm_reader_finds_a_run_of_holes_within_the_period) {
  queue k;
  notification n;
  for (uint32_t i = 0; i < detail::wary_looks; ++i) EXPECT_FALSE(k.take(n, nullptr));
  EXPECT_EQ(k.r.wary, 0u);
  for (uint64_t i = 0; i < 10 * detail::hole_check_period; ++i) EXPECT_FALSE(k.take(n, nullptr));
  EXPECT_EQ(k.r.wary, 0u);  // the cursor was in place at every look
  k.q.cursor.store(4);
  ASSERT_TRUE(k.append(notification{1, 0, 0, 44, 8}));
  uint64_t takes = 1;
  while (!k.take(n, nullptr) && takes <= detail::hole_check_period) ++takes;
  EXPECT_LE(takes, detail::hole_check_period);
  EXPECT_EQ(n.metadata, 44u);
  EXPECT_EQ(k.r.holes, 4u);
  EXPECT_EQ(k.r.wary, detail::wary_looks);
  k.q.cursor.store(k.r.cursor + 3);  // wary: the next run is found at the first idle take
  ASSERT_TRUE(k.append(notification{1, 0, 0, 66, 8}));
  ASSERT_TRUE(k.take(n, nullptr));
  EXPECT_EQ(n.metadata, 66u);
  EXPECT_EQ(k.r.holes, 7u);
}

// A writer publishes an entry before it moves the NQCB cursor past it: a
// reader that has taken the entry may find the cursor one behind its own.
// That counts as in place (no write to the writers' line, no wariness); a
// cursor anywhere else is put back where the reader stands.
TEST(hamlyn_queue, the_cursor_one_behind_is_left_alone) {
  queue k;
  ASSERT_TRUE(k.append(notification{1, 0, 0, 1, 8}));
  notification n;
  ASSERT_TRUE(k.take(n, nullptr));
  k.q.cursor.store(0);  // the writer has not moved it yet
  for (uint32_t i = 0; i < 2 * detail::wary_looks; ++i) EXPECT_FALSE(k.take(n, nullptr));
  EXPECT_EQ(k.q.cursor.load(), 0u);
  EXPECT_EQ(k.r.wary, 0u);
  EXPECT_EQ(k.r.holes + k.r.damaged, 0u);
  k.q.cursor.store(1 + 5 * queue::cap);  // more than a lap ahead: only a scribble puts it there
  for (uint64_t i = 0; i < detail::hole_check_period; ++i) EXPECT_FALSE(k.take(n, nullptr));
  EXPECT_EQ(k.q.cursor.load(), 1u);
  EXPECT_GT(k.r.wary, 0u);
}

// Honest writers and a reader that polls between them: never a hole, the
// reader calms down and stays calm, every notification once and in order.
TEST(hamlyn_queue, an_honest_queue_calms_the_reader) {
  queue k;
  notification n;
  for (uint64_t i = 0; i < 1000; ++i) {
    for (int idle = 0; idle < static_cast<int>(i % 5) + (i < 500 ? 3 : 0); ++idle)
      EXPECT_FALSE(k.take(n, nullptr));
    ASSERT_TRUE(k.append(notification{1, 0, 0, i, 8}));
    if (i % 3 == 0) {
      ASSERT_TRUE(k.append(notification{1, 0, 0, i + 10000, 8}));
    }
    ASSERT_TRUE(k.take(n, nullptr));
    EXPECT_EQ(n.metadata, i);
    if (i % 3 == 0) {
      ASSERT_TRUE(k.take(n, nullptr));
      EXPECT_EQ(n.metadata, i + 10000);
    }
  }
  EXPECT_EQ(k.r.holes + k.r.damaged + k.r.malformed, 0u);
  EXPECT_EQ(k.r.wary, 0u);
}

}  // namespace
}  // namespace hpam::test
