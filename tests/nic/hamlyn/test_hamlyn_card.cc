// The Hamlyn card between cards of one job in one process: slots, keys and
// bounds, packet counting (single, multi-packet out of order, group
// receive), the notification queue and its wrap flag, the slot modes,
// revocation, and the send terminus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "hamlyn_fixture.hpp"

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

struct sent {
  status posted;
  send_state state;
  status error;
};

sent send_bytes(card& c, const ticket& t, const void* data, size_t n, uint64_t offset = 0,
                const void* meta = nullptr, uint32_t meta_len = 0, uint64_t fast_word = 0) {
  iovec v{const_cast<void*>(data), n};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  m.offset = offset;
  m.metadata = meta;
  m.metadata_length = meta_len;
  m.fast_word = fast_word;
  send_handle h;
  sent r{c.terminus().send(t, m, h), send_state::error, status::ok};
  if (is_ok(r.posted)) r.state = c.terminus().state(h, &r.error);
  return r;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  return v;
}

uint32_t make_slot(card& c, const guarded_area& a, slot_mode mode = slot_mode::normal,
                   uint32_t metadata = 4) {
  slot_spec s;
  s.memory = area_memory::card;
  s.base = a.offset;
  s.bound = a.bytes;
  s.mode = mode;
  s.metadata_count = mode == slot_mode::fast ? 0 : metadata;
  uint32_t index = ~0u;
  EXPECT_EQ(c.slots().create_slot(s, index), status::ok);
  return index;
}

TEST(hamlyn_layout, wrap_flag_round_trip) {
  const uint64_t cursors[] = {0, 1, 7, 8, 1ull << 40, (1ull << 62) - 1};
  for (uint64_t c : cursors)
    for (entry_state s : {entry_state::free, entry_state::claimed, entry_state::written,
                          entry_state::written_compact}) {
      const uint64_t f = encode_wrap_flag(c, s);
      EXPECT_EQ(wrap_flag_cursor(f), c);
      EXPECT_EQ(wrap_flag_state(f), static_cast<uint64_t>(s));
    }
  // Flags for the same entry one lap apart differ, in every state.
  EXPECT_NE(encode_wrap_flag(3, entry_state::written),
            encode_wrap_flag(3 + 8, entry_state::written));
  // All ones: written compact, for a cursor value no reader reaches.
  EXPECT_EQ(wrap_flag_state(~0ull), static_cast<uint64_t>(entry_state::written_compact));
}

TEST(hamlyn_layout, flags_round_trip) {
  for (uint32_t k = 0; k < packet_kind_count; ++k)
    for (bool n : {false, true}) {
      const uint32_t f = encode_flags(static_cast<packet_kind>(k), n);
      EXPECT_EQ(flags_kind(f), static_cast<packet_kind>(k));
      EXPECT_EQ(flags_notify(f), n);
    }
}

TEST(hamlyn_ticket, split_keeps_the_counter_sum_and_the_range) {
  ticket t{};
  t.offset = 100;
  t.range = 3000;
  t.delta = 0;
  ticket a{}, b{};
  ASSERT_EQ(split_ticket(t, 1000, a), status::ok);
  ASSERT_EQ(split_ticket(t, 1000, b), status::ok);
  EXPECT_EQ(static_cast<uint32_t>(t.delta + a.delta + b.delta), 0u);
  EXPECT_NE(t.delta, 0u);
  EXPECT_NE(a.delta, 0u);
  EXPECT_NE(b.delta, 0u);
  EXPECT_EQ(t.range, 1000u);
  EXPECT_EQ(a.offset, 2100u);
  EXPECT_EQ(b.offset, 1100u);
  ticket c{};
  EXPECT_EQ(split_ticket(t, 1000, c), status::invalid_argument);  // nothing left for t
  t.delta = 1;
  EXPECT_EQ(split_ticket(t, 10, c),
            status::invalid_argument);  // 1 cannot be split into non-zero parts
}

// The slot table's limit is the named constant the deposit layer's knob
// (max_registrations) is bounded by: the card refuses one more slot, naming
// the range.
TEST(hamlyn_card, slot_count_is_bounded_by_max_slot_count) {
  card_config c = hamlyn_config(unique_job("slots"), 1, 0);
  c.slot_count = max_slot_count + 1;
  try {
    nic::hamlyn::card k(c);
    ADD_FAILURE() << "slot_count " << c.slot_count << " accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("slot_count must be in [1, " +
                                         std::to_string(max_slot_count) + "]"),
              std::string::npos)
        << e.what();
  }
}

// Area memory is handed out zeroed without writing it at allocation: the
// fresh segment is zero and a freed area is zeroed when taken back, so a
// reused range (merged with its free neighbours, then split again) and the
// top allocation read zero wherever the previous client wrote.
TEST(hamlyn_card, area_memory_comes_zeroed_fresh_and_reused) {
  card_config c = hamlyn_config(unique_job("area_zero"), 1, 0);
  nic::hamlyn::card k(c);
  auto all_zero = [&](uint64_t at, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i)
      if (k.slots().area_address(at)[i] != std::byte{0}) return false;
    return true;
  };
  uint64_t a = 0, b = 0, top = 0;
  ASSERT_EQ(k.slots().allocate_area(4096, a), status::ok);
  ASSERT_EQ(k.slots().allocate_area(1000, b), status::ok);
  ASSERT_EQ(k.slots().allocate_area_top(256, top), status::ok);
  EXPECT_TRUE(all_zero(a, 4096) && all_zero(b, 1024) && all_zero(top, 256));
  std::memset(k.slots().area_address(a), 0x5A, 4096);
  std::memset(k.slots().area_address(b), 0xC3, 1024);  // the aligned size, padding included
  std::memset(k.slots().area_address(top), 0x77, 256);
  k.slots().free_area(a);
  k.slots().free_area(top);
  k.slots().free_area(b);
  uint64_t again = 0, again_top = 0;
  ASSERT_EQ(k.slots().allocate_area(4096 + 1024 + 64, again), status::ok);
  EXPECT_EQ(again, a);  // the three ranges merged: the same memory, reused
  EXPECT_TRUE(all_zero(again, 4096 + 1024 + 64));
  ASSERT_EQ(k.slots().allocate_area_top(256, again_top), status::ok);
  EXPECT_EQ(again_top, top);
  EXPECT_TRUE(all_zero(again_top, 256));
}

TEST(hamlyn_card, single_packet_message_with_metadata_is_deposited_and_notified) {
  hamlyn_job j(2);
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a);
  const ticket t = j[1].slots().make_ticket(s, 2, 0, 4096, true);
  const auto data = pattern(100, 3);
  const char meta[] = "reply-seed";
  const sent r = send_bytes(j[0], t, data.data(), data.size(), 64, meta, sizeof meta);
  ASSERT_EQ(r.posted, status::ok);
  EXPECT_EQ(r.state, send_state::sent);
  EXPECT_EQ(j[0].terminus().completion_word(), 1u);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, s);
  EXPECT_EQ(n.metadata_index, 2u);
  EXPECT_EQ(n.source, 0u);
  EXPECT_EQ(std::memcmp(a.memory + 64, data.data(), data.size()), 0);
  const auto* e = reinterpret_cast<const metadata_entry*>(j[1].view(1).base + n.metadata);
  EXPECT_EQ(e, j[1].slots().metadata(s, 2));
  EXPECT_EQ(e->metadata_length, sizeof meta);
  EXPECT_EQ(std::memcmp(e->user_metadata, meta, sizeof meta), 0);
  EXPECT_EQ(e->packet_accumulator.load(), 0u);
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  EXPECT_TRUE(a.guards_intact());
}

TEST(hamlyn_card, multi_packet_message_notifies_once_with_every_byte) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 1 << 16);
  const uint32_t s = make_slot(j[1], a);
  const ticket t = j[1].slots().make_ticket(s, 0, 0, 1 << 16, true);
  for (size_t len : {size_t{192}, size_t{193}, size_t{5000}, size_t{60000}}) {
    const auto data = pattern(len, static_cast<uint8_t>(len));
    ASSERT_EQ(send_bytes(j[0], t, data.data(), len, 8, "m", 1).state, send_state::sent);
    notification n;
    ASSERT_TRUE(j[1].receiver().receive(0, n)) << len;
    EXPECT_FALSE(j[1].receiver().receive(0, n)) << len;
    EXPECT_EQ(std::memcmp(a.memory + 8, data.data(), len), 0) << len;
    EXPECT_EQ(j[1].slots().metadata(s, 0)->packet_accumulator.load(), 0u);
  }
  EXPECT_TRUE(a.guards_intact());
}

// The receiver's accumulator alone decides completion: packets handed to it
// in every kind of order notify exactly once, after the last one.
TEST(hamlyn_card, out_of_order_packets_are_reassembled) {
  hamlyn_job j(2);
  guarded_area a(j[1], 8192);
  const uint32_t s = make_slot(j[1], a);
  const ticket t = j[1].slots().make_ticket(s, 1, 0, 8192, true);
  const auto data = pattern(8000, 9);
  constexpr uint32_t per = 1000;
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    const uint32_t packets = 8;
    std::vector<packet_header> hs(packets);
    for (uint32_t i = 0; i < packets; ++i) {
      packet_header& h = hs[i];
      h = packet_header{};
      h.destination = 1;
      h.slot = s;
      h.metadata_index = 1;
      h.protection_key = t.protection_key;
      h.offset = uint64_t{i} * per;
      h.length = per;
      h.delta = i + 1 == packets ? static_cast<uint32_t>(-(int32_t)(packets - 1)) : 1u;
      h.flags = encode_flags(packet_kind::data, true);
    }
    std::vector<uint32_t> order(packets);
    std::iota(order.begin(), order.end(), 0u);
    if (round == 1) std::reverse(order.begin(), order.end());
    if (round > 1) std::shuffle(order.begin(), order.end(), rng);
    std::memset(a.memory, 0, 8192);
    notification n;
    for (uint32_t k = 0; k < packets; ++k) {
      EXPECT_FALSE(j[1].receiver().receive(0, n)) << "notified before packet " << k;
      const packet_header& h = hs[order[k]];
      iovec d{const_cast<uint8_t*>(data.data() + h.offset), per};
      ASSERT_EQ(j[0].receiver().arrive(j[0].view(1), h, &d, 1, nullptr, false), status::ok);
    }
    ASSERT_TRUE(j[1].receiver().receive(0, n)) << round;
    EXPECT_FALSE(j[1].receiver().receive(0, n));
    EXPECT_EQ(std::memcmp(a.memory, data.data(), 8000), 0);
  }
  EXPECT_TRUE(a.guards_intact());
}

// A last delta that would be 0 (Y = p-1) is avoided by the sender.
TEST(hamlyn_card, counter_start_equal_to_packets_minus_one_still_counts) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a);
  ticket whole = j[1].slots().make_ticket(s, 0, 0, 4096, true);
  ticket part{};
  ASSERT_EQ(split_ticket(whole, 2048, part), status::ok);
  whole.delta = 2;  // 3 packets: 1 + 1 + 0 would notify too early
  part.delta = static_cast<uint32_t>(-2);
  const auto data = pattern(192 * 3, 1);
  ASSERT_EQ(send_bytes(j[0], whole, data.data(), data.size()).state, send_state::sent);
  notification n;
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  ASSERT_EQ(send_bytes(j[0], part, data.data(), 10).state, send_state::sent);
  EXPECT_TRUE(j[1].receiver().receive(0, n));
}

TEST(hamlyn_card, group_receive_notifies_exactly_once_after_every_sender) {
  hamlyn_job j(4, [](card_config& c) { c.packet_size = 512; });
  guarded_area a(j[3], 3 * 4096);
  const uint32_t s = make_slot(j[3], a);
  ticket t0 = j[3].slots().make_ticket(s, 3, 0, 3 * 4096, true);
  ticket t1{}, t2{};
  ASSERT_EQ(split_ticket(t0, 4096, t1), status::ok);
  ASSERT_EQ(split_ticket(t0, 4096, t2), status::ok);
  const ticket tickets[3] = {t0, t1, t2};
  const size_t sizes[3] = {4000, 100, 2500};  // multi, single and multi-packet messages
  notification n;
  for (int sender = 0; sender < 3; ++sender) {
    EXPECT_FALSE(j[3].receiver().receive(0, n)) << "notified before sender " << sender;
    const auto data = pattern(sizes[sender], static_cast<uint8_t>(sender));
    ASSERT_EQ(send_bytes(j[sender], tickets[sender], data.data(), data.size()).state,
              send_state::sent);
    EXPECT_EQ(std::memcmp(a.memory + tickets[sender].offset, data.data(), data.size()), 0);
  }
  ASSERT_TRUE(j[3].receiver().receive(0, n));
  EXPECT_EQ(n.metadata_index, 3u);
  EXPECT_FALSE(j[3].receiver().receive(0, n));
  EXPECT_EQ(j[3].arrivals().messages, 1u);
  EXPECT_TRUE(a.guards_intact());
}

TEST(hamlyn_card, notification_queue_wraps_many_times_and_refuses_overrun) {
  hamlyn_job j(2, [](card_config& c) { c.notify_capacity = 8; });
  guarded_area a(j[1], 1024);
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.mode = slot_mode::fast;
  uint32_t s;
  ASSERT_EQ(j[1].slots().create_slot(spec, s), status::ok);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 0, 1024, true);
  uint64_t expect = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t word = i * 0x9E3779B97F4A7C15ull;
    ASSERT_EQ(send_bytes(j[0], t, &i, sizeof i, (i % 100) * 8, nullptr, 0, word).state,
              send_state::sent);
    if (i % 5 == 4) {  // read in batches that straddle the wrap point
      notification n;
      while (j[1].receiver().receive(0, n)) {
        EXPECT_EQ(n.metadata, expect * 0x9E3779B97F4A7C15ull);
        EXPECT_EQ(n.metadata_index, fast_index);
        ++expect;
      }
    }
  }
  EXPECT_EQ(expect, 1000u);
  EXPECT_EQ(j[1].view(1).queue(0)->overruns.load(), 0u);
  uint64_t v = 1;
  for (int i = 0; i < 9; ++i)
    ASSERT_EQ(send_bytes(j[0], t, &v, 8, 0, nullptr, 0, 500 + i).state, send_state::sent);
  EXPECT_EQ(j[1].view(1).queue(0)->overruns.load(), 1u);
  notification n;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(j[1].receiver().receive(0, n));
    EXPECT_EQ(n.metadata, 500u + i);  // the oldest eight, none overwritten
  }
  EXPECT_FALSE(j[1].receiver().receive(0, n));
}

TEST(hamlyn_card, wrong_key_out_of_bounds_and_revoked_are_rejected_and_counted) {
  hamlyn_job j(2);
  guarded_area a(j[1], 1024);
  const uint32_t s = make_slot(j[1], a);
  const auto data = pattern(200, 5);
  ticket bad = j[1].slots().make_ticket(s, 0, 0, 1 << 20, true);
  bad.protection_key ^= 1;
  sent r = send_bytes(j[0], bad, data.data(), data.size());
  EXPECT_EQ(r.state, send_state::error);
  EXPECT_EQ(r.error, status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  // A forged ticket wider than the slot: the receiving side's bounds check.
  const ticket wide = j[1].slots().make_ticket(s, 0, 0, 1 << 20, true);
  for (uint64_t off :
       {uint64_t{1024 - 199}, uint64_t{1024}, uint64_t{5000}, uint64_t{~0ull - 100}}) {
    ticket w = wide;
    w.offset = off;
    w.range = 1000;
    r = send_bytes(j[0], w, data.data(), data.size());
    EXPECT_EQ(r.error, status::rejected) << off;
  }
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 4u);
  EXPECT_TRUE(a.untouched());
  // Revoked: the old key no longer works; a new one does.
  ASSERT_EQ(send_bytes(j[0], wide, data.data(), 8).state, send_state::sent);
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  std::memset(a.memory, static_cast<int>(guarded_area::pattern), a.bytes);
  r = send_bytes(j[0], wide, data.data(), data.size());
  EXPECT_EQ(r.error, status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  ASSERT_EQ(j[1].slots().rekey(s, 0x1234), status::ok);
  r = send_bytes(j[0], wide, data.data(), data.size());
  EXPECT_EQ(r.error, status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 2u);
  EXPECT_TRUE(a.untouched());
  const ticket fresh = j[1].slots().make_ticket(s, 0, 0, 1024, true);
  EXPECT_EQ(send_bytes(j[0], fresh, data.data(), data.size()).state, send_state::sent);
  EXPECT_TRUE(a.guards_intact());
  // A bad slot number and a bad metadata index are malformed.
  ticket no_slot = fresh;
  no_slot.slot = 4000;
  EXPECT_EQ(send_bytes(j[0], no_slot, data.data(), 8).error, status::rejected);
  ticket no_entry = fresh;
  no_entry.metadata_index = 4;
  EXPECT_EQ(send_bytes(j[0], no_entry, data.data(), 8).error, status::rejected);
  EXPECT_EQ(j[1].arrivals().malformed, 2u);
}

TEST(hamlyn_card, paranoid_mode_checks_the_secondary_key_and_range) {
  hamlyn_job j(2);
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a, slot_mode::paranoid);
  ASSERT_EQ(j[1].slots().set_paranoid(s, 0, 0xABCDEF, 1024, 2048), status::ok);
  const ticket t = j[1].slots().make_ticket(s, 0, 1024, 1024, true);
  EXPECT_EQ(t.protection_key, 0xABCDEFu);
  const auto data = pattern(512, 1);
  EXPECT_EQ(send_bytes(j[0], t, data.data(), 512, 512).state, send_state::sent);
  ticket slot_key = t;
  slot_key.protection_key = j[1].slots().slot_at(s).protection_key.load();
  EXPECT_EQ(send_bytes(j[0], slot_key, data.data(), 512).error, status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  ticket outside = t;
  outside.offset = 0;  // inside the slot, outside the entry's range
  EXPECT_EQ(send_bytes(j[0], outside, data.data(), 512).error, status::rejected);
  outside.offset = 1900;
  EXPECT_EQ(send_bytes(j[0], outside, data.data(), 512).error, status::rejected);
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 2u);
  for (uint64_t i = 0; i < 1024; ++i) EXPECT_EQ(a.memory[i], guarded_area::pattern);
  for (uint64_t i = 2048; i < 4096; ++i) EXPECT_EQ(a.memory[i], guarded_area::pattern);
}

TEST(hamlyn_card, one_shot_refuses_a_second_message_until_rearmed) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a, slot_mode::paranoid_one_shot);
  ASSERT_EQ(j[1].slots().set_paranoid(s, 1, 77, 0, 4096), status::ok);
  const ticket t = j[1].slots().make_ticket(s, 1, 0, 4096, true);
  const auto first = pattern(1000, 1), second = pattern(1000, 2);
  ASSERT_EQ(send_bytes(j[0], t, first.data(), first.size()).state, send_state::sent);  // 6 packets
  EXPECT_EQ(send_bytes(j[0], t, second.data(), second.size()).error, status::rejected);
  EXPECT_EQ(j[1].arrivals().mode_rejections, 1u);
  EXPECT_EQ(std::memcmp(a.memory, first.data(), first.size()), 0);  // not overwritten
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  ASSERT_EQ(j[1].slots().rearm(s, 1), status::ok);
  ASSERT_EQ(send_bytes(j[0], t, second.data(), second.size()).state, send_state::sent);
  EXPECT_EQ(std::memcmp(a.memory, second.data(), second.size()), 0);
  EXPECT_TRUE(j[1].receiver().receive(0, n));
}

TEST(hamlyn_card, fast_mode_carries_one_word_in_the_notification) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a, slot_mode::fast);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 0, 4096, true);
  const auto data = pattern(150, 4);
  ASSERT_EQ(send_bytes(j[0], t, data.data(), 150, 300, nullptr, 0, 0xFEEDull).state,
            send_state::sent);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.metadata_index, fast_index);
  EXPECT_EQ(n.metadata, 0xFEEDu);
  EXPECT_EQ(n.length, 150u);
  EXPECT_EQ(std::memcmp(a.memory + 300, data.data(), 150), 0);
  const auto big = pattern(1000, 4);
  EXPECT_EQ(send_bytes(j[0], t, big.data(), 1000).posted,
            status::invalid_argument);  // not one packet
  ticket normal = t;
  normal.metadata_index = 0;
  EXPECT_EQ(send_bytes(j[0], normal, data.data(), 10).error, status::rejected);
  EXPECT_EQ(j[1].arrivals().mode_rejections, 1u);
}

// send_fast (the lean single-packet path) does what send() does for a
// fast-mode message: the receiving interface's checks (key, bounds, slot
// state) refuse and count, a good message is deposited, counted and
// notified with its word, and it takes a work-queue position (completion
// word, state) like any other message.
TEST(hamlyn_card, fast_send_checks_deposits_counts_and_notifies) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 4096);
  const uint32_t s = make_slot(j[1], a, slot_mode::fast);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 256, 256, true);
  const auto data = pattern(150, 9);
  const auto* bytes = reinterpret_cast<const std::byte*>(data.data());
  send_terminus& tx = j[0].terminus();
  send_handle h;
  ASSERT_EQ(tx.send_fast(t, 0, bytes, 150, 0xBEEF, h), status::ok);
  EXPECT_EQ(tx.state(h), send_state::sent);
  EXPECT_EQ(tx.completion_word(), 1u);
  EXPECT_EQ(j[1].arrivals().packets, 1u);
  EXPECT_EQ(j[1].arrivals().messages, 1u);
  EXPECT_EQ(std::memcmp(a.memory + 256, data.data(), 150), 0);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, s);
  EXPECT_EQ(n.metadata_index, fast_index);
  EXPECT_EQ(n.source, 0u);
  EXPECT_EQ(n.metadata, 0xBEEFu);
  EXPECT_EQ(n.length, 150u);
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  std::memset(a.memory, static_cast<int>(guarded_area::pattern), a.bytes);
  // The terminus's own checks: beyond the ticket's range, or one packet.
  EXPECT_EQ(tx.send_fast(t, 0, bytes, 257, 1, h), status::invalid_argument);
  ticket wide = t;
  wide.range = 4096;
  EXPECT_EQ(tx.send_fast(wide, 0, bytes, 1000, 1, h), status::invalid_argument);
  // The receiving interface's: key, bounds, fast mode on a slot that is not.
  ticket bad = t;
  bad.protection_key ^= 1;
  EXPECT_EQ(tx.send_fast(bad, 0, bytes, 8, 1, h), status::rejected);
  status why = status::ok;
  EXPECT_EQ(tx.state(h, &why), send_state::error);
  EXPECT_EQ(why, status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  ticket outside = t;
  outside.offset = 4000;  // 150 bytes from 4000 cross the slot's bound (4096)
  EXPECT_EQ(tx.send_fast(outside, 0, bytes, 150, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 1u);
  ticket not_fast = t;
  not_fast.metadata_index = 0;  // through send(): a fast slot takes fast-mode packets only
  EXPECT_EQ(tx.send_fast(not_fast, 0, bytes, 8, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().mode_rejections, 1u);
  // A revoked slot refuses; so does the old key once it has a new one.
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_EQ(tx.send_fast(t, 0, bytes, 8, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  ASSERT_EQ(j[1].slots().rekey(s, 0x4321), status::ok);
  EXPECT_EQ(tx.send_fast(t, 0, bytes, 8, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 2u);
  EXPECT_EQ(tx.rejected_sends(), 5u);
  EXPECT_TRUE(a.untouched());
  EXPECT_FALSE(j[1].receiver().receive(0, n));  // nothing refused was notified
  EXPECT_EQ(j[1].arrivals().packets, 1u);
  const ticket fresh = j[1].slots().make_ticket(s, fast_index, 0, 256, true);
  ASSERT_EQ(tx.send_fast(fresh, 0, bytes, 100, 7, h), status::ok);
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.metadata, 7u);
  EXPECT_EQ(tx.completion_word(), 7u);  // every message posted took a position
}

// Two cards whose engines send one 256-byte packet per kick; on card 1 a
// fast-mode slot s over `a` and its ticket t (256 bytes at offset 256), and
// big_area for a message the engine has not finished; card 0's terminus tx.
struct routed_pair {
  hamlyn_job j{2, [](card_config& c) {
                 c.engine_budget = 1;
                 c.packet_size = 256;
               }};
  guarded_area a{j[1], 4096}, big_area{j[1], 4096};
  const uint32_t s = make_slot(j[1], a, slot_mode::fast);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 256, 256, true);
  send_terminus& tx = j[0].terminus();
};

// A fast message (sent by `send`, metadata 3, to slot fast_slot) behind a
// 3-packet message the engine (one packet per kick, engine_budget 1) has
// not finished: posted, sent once the engine has kicked its way to it
// (`sent`), and it arrives after the earlier one.
template <class Send, class Sent>
void expect_posted_behind_a_busy_engine(hamlyn_job& j, guarded_area& big_area, uint32_t fast_slot,
                                        Send send, Sent sent) {
  send_terminus& tx = j[0].terminus();
  const uint32_t bs = make_slot(j[1], big_area);
  const auto big = pattern(192 * 3, 2);  // 3 packets: the engine sends one per kick
  ASSERT_EQ(send_bytes(j[0], j[1].slots().make_ticket(bs, 0, 0, 4096, true), big.data(), big.size())
                .state,
            send_state::pending);
  ASSERT_EQ(send(), status::ok);
  for (int k = 0; k < 100 && !sent(); ++k) tx.kick();
  ASSERT_TRUE(sent());
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, bs);  // the earlier message first
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, fast_slot);
  EXPECT_EQ(n.metadata, 3u);
}

// send_fast_routed (the AM card's path: the ticket's route found once) has
// send_fast's results and effects: a route only for a fast-mode ticket to an
// attached card of the job; a good message deposited, counted, notified and
// given a work-queue position; the range, the receiving interface's checks
// and a busy engine still decided per packet.
TEST(hamlyn_card, a_routed_fast_send_is_a_fast_send) {
  routed_pair p;
  auto& [j, a, big_area, s, t, tx] = p;
  fast_route r;
  ticket not_fast = t;
  not_fast.metadata_index = 0;
  EXPECT_FALSE(tx.fast_route_for(not_fast, r));
  ticket nowhere = t;
  nowhere.node = 2;  // outside the job
  EXPECT_FALSE(tx.fast_route_for(nowhere, r));
  ticket no_slot = t;
  no_slot.slot = j[0].view(1).geo.slot_count;  // a slot the card does not have
  EXPECT_FALSE(tx.fast_route_for(no_slot, r));
  ASSERT_TRUE(tx.fast_route_for(t, r));
  EXPECT_FALSE(r.local);
  // Found once: the slot, and my hold line there (the card offers lines).
  EXPECT_EQ(r.at, &j[0].view(1).slots[s]);
  EXPECT_EQ(r.line, j[0].receiver().arrival_line(j[0].view(1)));
  EXPECT_NE(r.line, nullptr);
  const auto data = pattern(150, 9);
  const auto* bytes = reinterpret_cast<const std::byte*>(data.data());
  send_handle h;
  ASSERT_EQ(tx.send_fast_routed(r, t, 0, bytes, 150, 0xBEEF, h), status::ok);
  EXPECT_EQ(tx.state(h), send_state::sent);
  EXPECT_EQ(tx.completion_word(), 1u);
  EXPECT_EQ(j[1].arrivals().packets, 1u);
  EXPECT_EQ(std::memcmp(a.memory + 256, data.data(), 150), 0);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.metadata, 0xBEEFu);
  EXPECT_EQ(n.length, 150u);
  std::memset(a.memory, static_cast<int>(guarded_area::pattern), a.bytes);
  // Per packet still: the range, the key, the slot's state.
  EXPECT_EQ(tx.send_fast_routed(r, t, 200, bytes, 100, 1, h), status::invalid_argument);
  ticket bad = t;
  bad.protection_key ^= 1;
  EXPECT_EQ(tx.send_fast_routed(r, bad, 0, bytes, 8, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_EQ(tx.send_fast_routed(r, t, 0, bytes, 8, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  EXPECT_TRUE(a.untouched());
  EXPECT_EQ(tx.rejected_sends(), 2u);
  // Behind a message the engine has not finished: posted, in order.
  const uint32_t fs = make_slot(j[1], a, slot_mode::fast);
  const ticket ft = j[1].slots().make_ticket(fs, fast_index, 0, 256, true);
  ASSERT_TRUE(tx.fast_route_for(ft, r));
  send_handle posted;
  ASSERT_NO_FATAL_FAILURE(expect_posted_behind_a_busy_engine(
      j, big_area, fs,
      [&] {
        const status st = p.tx.send_fast_routed(r, ft, 0, bytes, 8, 3, posted);
        if (st == status::ok) {
          EXPECT_EQ(p.tx.state(posted), send_state::pending);
        }
        return st;
      },
      [&] { return p.tx.state(posted) == send_state::sent; }));
}

// send_fast_within leaves the ticket's range to its caller (the AM card's
// blocks lie in its region by construction), but the receiving interface
// still checks every packet against the slot: its bound, the key, the
// state; a message delivered at once is no work-queue entry (no sequence,
// the completion word stays); and behind a busy engine the message is
// posted in order.
TEST(hamlyn_card, a_fast_send_within_is_checked_by_the_receiver) {
  routed_pair p;
  auto& [j, a, big_area, s, t, tx] = p;
  EXPECT_EQ(tx.packet_data_bytes(), 256u - sizeof(packet_header));
  fast_route r;
  ASSERT_TRUE(tx.fast_route_for(t, r));
  const auto data = pattern(150, 4);
  const auto* bytes = reinterpret_cast<const std::byte*>(data.data());
  ASSERT_EQ(tx.send_fast_within(r, t, 0, bytes, 150, 0xCAFE), status::ok);
  EXPECT_EQ(tx.completion_word(), 0u);
  EXPECT_TRUE(tx.idle());
  EXPECT_EQ(std::memcmp(a.memory + 256, data.data(), 150), 0);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.metadata, 0xCAFEu);
  EXPECT_EQ(n.length, 150u);
  std::memset(a.memory, static_cast<int>(guarded_area::pattern), a.bytes);
  // A caller that breaks its word past the slot's bound: refused there.
  EXPECT_EQ(tx.send_fast_within(r, t, 4096 - 256 - 8, bytes, 16, 1), status::rejected);
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 1u);
  ticket bad = t;
  bad.protection_key ^= 1;
  EXPECT_EQ(tx.send_fast_within(r, bad, 0, bytes, 8, 1), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  EXPECT_EQ(tx.rejected_sends(), 2u);
  EXPECT_EQ(tx.completion_word(), 0u);
  EXPECT_TRUE(a.untouched());
  // Behind a message the engine has not finished: posted, in order, and
  // sent once the engine gets to it.
  ASSERT_NO_FATAL_FAILURE(expect_posted_behind_a_busy_engine(
      j, big_area, s,
      [&] {
        const status st = p.tx.send_fast_within(r, t, 0, bytes, 8, 3);
        EXPECT_FALSE(p.tx.idle());
        EXPECT_FALSE(j[1].receiver().receive(0, n));
        return st;
      },
      [&] { return p.tx.idle(); }));
  EXPECT_EQ(tx.completion_word(), 2u);  // the two entries: the big message and the posted one
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_EQ(tx.send_fast_within(r, t, 0, bytes, 8, 1), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  EXPECT_EQ(tx.rejected_sends(), 3u);
}

// Behind a message the engine has not finished, a fast message waits its
// turn in the work queue (in order), and the caller's buffer may be reused.
TEST(hamlyn_card, fast_send_behind_a_busy_engine_is_posted_in_order) {
  hamlyn_job j(2, [](card_config& c) {
    c.engine_budget = 1;
    c.packet_size = 256;
  });
  guarded_area a(j[1], 4096), f(j[1], 256);
  const uint32_t s = make_slot(j[1], a);
  const uint32_t fs = make_slot(j[1], f, slot_mode::fast);
  const ticket t = j[1].slots().make_ticket(s, 0, 0, 4096, true);
  const auto big = pattern(192 * 3, 2);  // 3 packets: the engine sends one per kick
  send_terminus& tx = j[0].terminus();
  ASSERT_EQ(send_bytes(j[0], t, big.data(), big.size()).state, send_state::pending);
  uint64_t word = 0x55;
  send_handle h;
  ASSERT_EQ(tx.send_fast(j[1].slots().make_ticket(fs, fast_index, 0, 256, true), 0,
                         reinterpret_cast<const std::byte*>(&word), sizeof word, 3, h),
            status::ok);
  EXPECT_EQ(tx.state(h), send_state::pending);
  word = 0;  // direct I/O: the terminus holds its own copy
  for (int k = 0; k < 100 && tx.state(h) != send_state::sent; ++k) tx.kick();
  ASSERT_EQ(tx.state(h), send_state::sent);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, s);  // the earlier message first
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.slot, fs);
  EXPECT_EQ(n.metadata, 3u);
  uint64_t got = 0;
  std::memcpy(&got, f.memory, sizeof got);
  EXPECT_EQ(got, 0x55u);
}

TEST(hamlyn_card, work_queue_fills_then_the_completion_word_catches_up) {
  // engine_budget 1 and a receiver FIFO it cannot use: each kick sends one packet.
  hamlyn_job j(2, [](card_config& c) {
    c.engine_budget = 1;
    c.work_queue_entries = 4;
    c.packet_size = 256;
  });
  guarded_area a(j[1], 1 << 16);
  const uint32_t s = make_slot(j[1], a);
  const ticket t = j[1].slots().make_ticket(s, 0, 0, 1 << 16, false);
  const auto data = pattern(192 * 3, 1);  // 3 packets each
  iovec v{const_cast<uint8_t*>(data.data()), data.size()};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  std::vector<send_handle> hs;
  status st = status::ok;
  while (st == status::ok) {
    send_handle h;
    st = j[0].terminus().send(t, m, h);
    if (is_ok(st)) hs.push_back(h);
  }
  EXPECT_EQ(st, status::would_block);
  EXPECT_GE(hs.size(), 4u);
  EXPECT_EQ(j[0].terminus().state(hs.back()), send_state::pending);
  for (int k = 0; k < 100 && j[0].terminus().state(hs.back()) != send_state::sent; ++k)
    j[0].terminus().kick();
  for (const send_handle& h : hs) EXPECT_EQ(j[0].terminus().state(h), send_state::sent);
  EXPECT_EQ(j[0].terminus().completion_word(), hs.size());
  EXPECT_EQ(std::memcmp(a.memory, data.data(), data.size()), 0);
}

TEST(hamlyn_card, gather_list_and_direct_io_deliver_the_same_bytes) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
  guarded_area a(j[1], 8192);
  const uint32_t s = make_slot(j[1], a);
  const ticket t = j[1].slots().make_ticket(s, 0, 0, 8192, true);
  const auto data = pattern(3000, 8);
  iovec parts[3] = {{const_cast<uint8_t*>(data.data()), 1000},
                    {const_cast<uint8_t*>(data.data()) + 1000, 1},
                    {const_cast<uint8_t*>(data.data()) + 1001, 1999}};
  message m;
  m.gather = parts;
  m.gather_count = 3;
  send_handle h;
  ASSERT_EQ(j[0].terminus().send(t, m, h), status::ok);
  EXPECT_EQ(j[0].terminus().state(h), send_state::sent);
  EXPECT_EQ(std::memcmp(a.memory, data.data(), 3000), 0);
  notification n;
  EXPECT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_TRUE(a.guards_intact());
}

}  // namespace
}  // namespace hpam::test

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

// Random and forged packets through the inbound FIFO: every one refused and
// counted, no byte outside what a valid ticket allows, no crash.
TEST(hamlyn_card, forged_inbound_packets_are_refused_and_counted) {
  hamlyn_job j(2, [](card_config& c) {
    c.cross_memory = false;
    c.packet_size = 512;
  });
  guarded_area a(j[1], 2048);
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.metadata_count = 2;
  uint32_t s;
  ASSERT_EQ(j[1].slots().create_slot(spec, s), status::ok);
  const uint64_t key = j[1].slots().slot_at(s).protection_key.load();
  std::mt19937_64 rng(7);
  std::vector<std::byte> junk(448);
  uint64_t pushed = 0;
  for (int i = 0; i < 2000; ++i) {
    packet_header h{};
    h.destination = 1;
    h.source = static_cast<uint32_t>(rng() % 4);
    h.slot = static_cast<uint32_t>(rng() % 3 == 0 ? s : rng());
    h.metadata_index = static_cast<uint32_t>(rng() % 4);
    h.protection_key = rng() % 2 ? key ^ (1 + rng() % 1000) : rng();  // never the right key
    h.offset = rng() % 3 == 0 ? rng() % 4096 : rng();
    h.length = static_cast<uint32_t>(rng() % 4 == 0 ? rng() : rng() % 448);
    h.delta = static_cast<uint32_t>(rng());
    h.metadata_length = static_cast<uint32_t>(rng() % 5 == 0 ? rng() : rng() % 64);
    h.flags = static_cast<uint32_t>(rng() % 2 ? rng() : rng() % 8);
    h.fast_word = rng();
    iovec piece{junk.data(),
                std::min<size_t>(junk.size(), 448 - std::min<uint32_t>(h.metadata_length, 448))};
    if (j[0].push_packet(1, h, &piece, 1)) ++pushed;
    (void)j[1].receiver().poll_inbound();
  }
  // Forged entries in the ready FIFO: a buffer number out of range, a
  // length beyond the buffers, a length shorter than a header.
  for (uint64_t forged :
       {inbound_entry(1u << 30, 64), inbound_entry(0, 1u << 30), inbound_entry(0, 8)}) {
    uint64_t pos;
    std::byte* cell = j[0].view(1).rx_ready.claim(pos);
    ASSERT_NE(cell, nullptr);
    j[0].view(1).rx_ready.publish(cell, pos, forged);
  }
  const uint64_t malformed_before = j[1].arrivals().malformed;
  (void)j[1].receiver().poll_inbound();
  EXPECT_EQ(j[1].arrivals().malformed, malformed_before + 3);
  EXPECT_GT(pushed, 1000u);
  EXPECT_TRUE(a.untouched());
  notification n;
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  const arrival_totals c = j[1].arrivals();
  EXPECT_GE(c.malformed + c.key_rejections + c.bounds_rejections + c.revoked_rejections +
                c.mode_rejections,
            pushed);
  EXPECT_EQ(c.packets, 0u);
}

}  // namespace
}  // namespace hpam::test

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

// Tickets are plain data: a request carries the requester's reply ticket as
// metadata, and the server answers through it (Rats' simple datagram).
TEST(hamlyn_card, a_ticket_travels_in_a_message_and_is_used_to_reply) {
  hamlyn_job j(2);
  guarded_area server_area(j[1], 1024), client_area(j[0], 1024);
  slot_spec spec;
  spec.metadata_count = 1;
  spec.base = server_area.offset;
  spec.bound = 1024;
  uint32_t server_slot, client_slot;
  ASSERT_EQ(j[1].slots().create_slot(spec, server_slot), status::ok);
  spec.base = client_area.offset;
  ASSERT_EQ(j[0].slots().create_slot(spec, client_slot), status::ok);
  const ticket to_server = j[1].slots().make_ticket(server_slot, 0, 0, 1024, true);
  const ticket reply = j[0].slots().make_ticket(client_slot, 0, 0, 1024, true);
  const char question[] = "ping";
  iovec v{const_cast<char*>(question), sizeof question};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  m.metadata = &reply;
  m.metadata_length = sizeof reply;
  send_handle h;
  ASSERT_EQ(j[0].terminus().send(to_server, m, h), status::ok);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  const auto* e = reinterpret_cast<const metadata_entry*>(j[1].view(1).base + n.metadata);
  ASSERT_EQ(e->metadata_length, sizeof(ticket));
  ticket back;
  std::memcpy(&back, e->user_metadata, sizeof back);
  const char answer[] = "pong";
  iovec a{const_cast<char*>(answer), sizeof answer};
  message r;
  r.gather = &a;
  r.gather_count = 1;
  r.offset = 100;
  ASSERT_EQ(j[1].terminus().send(back, r, h), status::ok);
  EXPECT_EQ(j[1].terminus().state(h), send_state::sent);
  ASSERT_TRUE(j[0].receiver().receive(0, n));
  EXPECT_EQ(n.source, 1u);
  EXPECT_EQ(std::memcmp(client_area.memory + 100, answer, sizeof answer), 0);
  EXPECT_EQ(std::memcmp(server_area.memory, question, sizeof question), 0);
}

// A sender keeps depositing from another thread while the owner revokes:
// once revoke returns, not one more byte changes.
TEST(hamlyn_card, nothing_lands_after_revoke_returns) {
  hamlyn_job j(2, [](card_config& c) { c.packet_size = 4096; });
  guarded_area a(j[1], 256 * 1024);
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.metadata_count = 1;
  uint32_t s;
  ASSERT_EQ(j[1].slots().create_slot(spec, s), status::ok);
  const ticket t = j[1].slots().make_ticket(s, 0, 0, a.bytes, false);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent_ok{0};
  std::thread sender([&] {
    std::vector<uint8_t> data(a.bytes);
    for (uint8_t k = 1; !stop.load(); ++k) {
      std::memset(data.data(), k, data.size());
      iovec v{data.data(), data.size()};
      message m;
      m.gather = &v;
      m.gather_count = 1;
      send_handle h;
      if (!is_ok(j[0].terminus().send(t, m, h)) || j[0].terminus().state(h) != send_state::sent)
        break;
      sent_ok++;
    }
  });
  expect_nothing_lands_after_revoke(j[1], a, s, sender, sent_ok, 3, stop);
}

}  // namespace
}  // namespace hpam::test
