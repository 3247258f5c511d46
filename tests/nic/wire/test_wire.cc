// The wire alone, with a sink that records what it is given: the fault
// generator, corruption, holding and the no-copy fault-free path.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "nic/wire/wire.hpp"
#include "sys/clock.hpp"

namespace hpam::nic {
namespace {

struct recording_sink {
  struct delivery {
    int dest;
    const std::byte* where;
    std::vector<std::byte> bytes;
  };
  std::vector<delivery> got;
  void deliver(int dest, const std::byte* packet, uint32_t length) noexcept {
    got.push_back({dest, packet, std::vector<std::byte>(packet, packet + length)});
  }
};

std::vector<std::byte> packet_of(uint8_t tag, uint32_t len) {
  std::vector<std::byte> p(len);
  for (uint32_t i = 0; i < len; ++i) p[i] = static_cast<std::byte>(tag + i * 3);
  return p;
}

TEST(fault_rng, thresholds) {
  EXPECT_EQ(fault_rng::threshold_for(0), 0u);
  EXPECT_EQ(fault_rng::threshold_for(-1), 0u);
  EXPECT_EQ(fault_rng::threshold_for(1), uint64_t{1} << 53);
  EXPECT_EQ(fault_rng::threshold_for(0.5), uint64_t{1} << 52);
  fault_rng r(3);
  int always = 0, never = 0, half = 0;
  for (int i = 0; i < 10000; ++i) {
    always += r.chance(fault_rng::threshold_for(1));
    never += r.chance(0);
    half += r.chance(fault_rng::threshold_for(0.5));
  }
  EXPECT_EQ(always, 10000);
  EXPECT_EQ(never, 0);
  EXPECT_GT(half, 4500);
  EXPECT_LT(half, 5500);
}

TEST(fault_rng, seeded_and_bounded) {
  fault_rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    differs = differs || x != c.next();
  }
  EXPECT_TRUE(differs);
  for (uint64_t n : {1ull, 2ull, 3ull, 1000ull, 1ull << 40})
    for (int i = 0; i < 1000; ++i) EXPECT_LT(a.below(n), n);
}

TEST(wire, fault_free_delivers_the_senders_bytes_in_place) {
  sys::clock clk;
  wire w(fault_config{}, 0, 256, clk);
  EXPECT_FALSE(w.faulty());
  recording_sink s;
  auto p = packet_of(1, 100);
  w.transmit(s, 3, p.data(), 100);
  ASSERT_EQ(s.got.size(), 1u);
  EXPECT_EQ(s.got[0].dest, 3);
  EXPECT_EQ(s.got[0].where, p.data());  // no copy on the fault-free path
  EXPECT_EQ(s.got[0].bytes, p);
  w.service(s);
  EXPECT_EQ(s.got.size(), 1u);
  EXPECT_EQ(w.counters().sent, 1u);
}

TEST(wire, rejects_bad_probabilities) {
  sys::clock clk;
  fault_config f;
  f.corrupt = -0.1;
  EXPECT_THROW(wire(f, 0, 64, clk), std::invalid_argument);
  f.corrupt = 0;
  f.delay = 2;
  EXPECT_THROW(wire(f, 0, 64, clk), std::invalid_argument);
  f.delay = 0;
  f.reorder = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(wire(f, 0, 64, clk), std::invalid_argument);
}

TEST(wire, corruption_flips_one_to_three_bits_of_a_copy) {
  sys::clock clk;
  fault_config f;
  f.corrupt = 1.0;
  f.seed = 5;
  wire w(f, 0, 256, clk);
  recording_sink s;
  std::vector<int> flips_seen(wire::max_corrupt_bits + 1, 0);
  bool header_hit = false;
  for (int i = 0; i < 2000; ++i) {
    const uint32_t len = 16 + static_cast<uint32_t>(i % 200);
    auto p = packet_of(static_cast<uint8_t>(i), len);
    const auto original = p;
    w.transmit(s, 1, p.data(), len);
    EXPECT_EQ(p, original);  // the sender's buffer is never touched
    const auto& got = s.got.back().bytes;
    ASSERT_EQ(got.size(), len);
    int flipped = 0;
    for (uint32_t k = 0; k < len; ++k) {
      const auto d = static_cast<unsigned>(got[k] ^ original[k]);
      flipped += static_cast<int>(std::bitset<8>(d).count());
      header_hit = header_hit || (d != 0 && k < 16);
    }
    ASSERT_GE(flipped, 1);
    ASSERT_LE(flipped, static_cast<int>(wire::max_corrupt_bits));
    ++flips_seen[flipped];
  }
  EXPECT_EQ(w.counters().corrupted, 2000u);
  EXPECT_TRUE(header_hit);
  for (uint32_t k = 1; k <= wire::max_corrupt_bits; ++k) EXPECT_GT(flips_seen[k], 0);
}

TEST(wire, held_packets_are_copies_and_keep_their_destination) {
  sys::manual_time t;
  sys::clock clk(&t);
  fault_config f;
  f.delay = 1.0;
  f.delay_ns = 10;
  f.duplicate = 0;
  wire w(f, 0, 64, clk);
  recording_sink s;
  auto p = packet_of(9, 40);
  const auto original = p;
  w.transmit(s, 2, p.data(), 40);
  w.transmit(s, 5, p.data(), 40);
  std::memset(p.data(), 0, p.size());  // the sender reuses its buffer at once
  EXPECT_TRUE(s.got.empty());
  EXPECT_EQ(w.held(), 2u);
  t.advance(10);
  w.service(s);
  ASSERT_EQ(s.got.size(), 2u);
  std::vector<int> dests{s.got[0].dest, s.got[1].dest};
  std::sort(dests.begin(), dests.end());
  EXPECT_EQ(dests, std::vector<int>({2, 5}));
  for (const auto& d : s.got) EXPECT_EQ(d.bytes, original);
}

TEST(wire, duplicated_and_held_packet_arrives_twice_later) {
  sys::manual_time t;
  sys::clock clk(&t);
  fault_config f;
  f.delay = 1.0;
  f.duplicate = 1.0;
  f.delay_ns = 100;
  wire w(f, 0, 64, clk);
  recording_sink s;
  auto p = packet_of(4, 20);
  w.transmit(s, 1, p.data(), 20);
  EXPECT_TRUE(s.got.empty());
  w.flush(s);
  ASSERT_EQ(s.got.size(), 2u);
  EXPECT_EQ(s.got[0].bytes, p);
  EXPECT_EQ(s.got[1].bytes, p);
  EXPECT_EQ(w.held(), 0u);
}

TEST(wire, reordered_packet_follows_the_next_one) {
  sys::clock clk;
  fault_config f;
  f.reorder = 1.0;
  wire w(f, 0, 64, clk);
  recording_sink s;
  auto p0 = packet_of(0, 20);
  w.transmit(s, 1, p0.data(), 20);
  EXPECT_TRUE(s.got.empty());
  // Every following packet is held too, and releases the one before it.
  for (uint8_t i = 1; i < 10; ++i) {
    auto p = packet_of(i, 20);
    w.transmit(s, 1, p.data(), 20);
    ASSERT_EQ(s.got.size(), i);
    EXPECT_EQ(s.got.back().bytes, packet_of(static_cast<uint8_t>(i - 1), 20));
  }
  EXPECT_EQ(w.counters().reordered, 10u);
}

TEST(wire, process_number_changes_the_sequence) {
  sys::clock clk;
  fault_config f;
  f.drop = 0.5;
  f.seed = 7;
  wire w0(f, 0, 64, clk), w1(f, 1, 64, clk), w0b(f, 0, 64, clk);
  recording_sink s0, s1, s0b;
  auto p = packet_of(1, 20);
  std::vector<size_t> trace0, trace1, trace0b;  // deliveries so far, after each packet
  for (int i = 0; i < 200; ++i) {
    w0.transmit(s0, 0, p.data(), 20);
    w1.transmit(s1, 0, p.data(), 20);
    w0b.transmit(s0b, 0, p.data(), 20);
    trace0.push_back(s0.got.size());
    trace1.push_back(s1.got.size());
    trace0b.push_back(s0b.got.size());
  }
  EXPECT_EQ(trace0, trace0b);
  EXPECT_NE(trace0, trace1);
}

}  // namespace
}  // namespace hpam::nic
