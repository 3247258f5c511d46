// The wire's faults seen through two Medusa cards: for each fault kind alone
// (fixed seed) and all at once, the sender's counters must agree with what
// the receiver observed, and every packet that passes the CRC is byte-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "medusa_test_util.hpp"
#include "nic/medusa/medusa_card.hpp"
#include "sys/clock.hpp"

namespace hpam::nic {
namespace {

using namespace test;

constexpr uint32_t block = 512;

struct faulty_pair {
  faulty_pair(const char* tag, const fault_config& f, const sys::clock* clk = nullptr,
              uint32_t rx = 4096) {
    const std::string job = unique_job(tag);
    card_setup s0 = make_setup(job, 2, 0, 1, 4, block);
    card_setup s1 = make_setup(job, 2, 1, 1, rx, block);
    s0.faults = f;
    s0.clock = clk;
    a = std::make_unique<medusa_card>(s0);
    b = std::make_unique<medusa_card>(s1);
    a->attach_peer(1);
    if (!a->claim_tx_block(tx)) throw std::logic_error("no tx block");
  }
  void send(uint64_t seq) { a->launch(1, tx, build_packet(a->tx_block(tx), seq, block)); }
  std::unique_ptr<medusa_card> a, b;
  uint32_t tx = 0;
};

// What the receiver saw.
struct observed {
  explicit observed(uint64_t n) : copies(n, 0) {}
  uint64_t entries = 0;         // packets popped from RX_READY
  uint64_t crc_bad = 0;         // of which failed the CRC check
  uint64_t mismatch = 0;        // passed the CRC but differ from what was sent (must stay 0)
  std::vector<int> copies;      // per sequence number: copies that arrived intact
  std::vector<uint64_t> order;  // sequence numbers in arrival order

  void drain(medusa_card& c) {
    rx_packet r{};
    while (c.receive(r)) {
      ++entries;
      if (!r.crc_ok) {
        ++crc_bad;
      } else {
        const uint64_t seq = check_packet(r, 0, 1, block);
        if (seq >= copies.size()) {
          ++mismatch;
        } else {
          ++copies[seq];
          order.push_back(seq);
        }
      }
      c.release(r);
    }
  }
  uint64_t with_copies(int k) const {
    return static_cast<uint64_t>(std::count(copies.begin(), copies.end(), k));
  }
  uint64_t inversions() const {
    uint64_t n = 0;
    for (size_t i = 1; i < order.size(); ++i) n += order[i] < order[i - 1];
    return n;
  }
};

observed run(faulty_pair& p, uint64_t n) {
  observed o(n);
  for (uint64_t seq = 0; seq < n; ++seq) {
    p.send(seq);
    p.a->service();
    o.drain(*p.b);
  }
  p.a->flush_wire();
  o.drain(*p.b);
  return o;
}

constexpr uint64_t packets = 4000;

TEST(medusa_faults, no_faults_deliver_everything_once) {
  faulty_pair p("nofault", fault_config{});
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_EQ(w.sent, packets);
  EXPECT_EQ(w.dropped + w.duplicated + w.corrupted + w.reordered + w.delayed, 0u);
  EXPECT_EQ(o.entries, packets);
  EXPECT_EQ(o.with_copies(1), packets);
  EXPECT_EQ(o.inversions(), 0u);
}

TEST(medusa_faults, drop_only) {
  fault_config f;
  f.drop = 0.25;
  f.seed = 11;
  faulty_pair p("drop", f);
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_GT(w.dropped, packets / 8);
  EXPECT_LT(w.dropped, packets / 2);
  EXPECT_EQ(o.entries, w.sent - w.dropped);
  EXPECT_EQ(o.with_copies(1), w.sent - w.dropped);
  EXPECT_EQ(o.with_copies(0), w.dropped);
  EXPECT_EQ(o.crc_bad + o.mismatch, 0u);
}

TEST(medusa_faults, duplicate_only) {
  fault_config f;
  f.duplicate = 0.2;
  f.seed = 12;
  faulty_pair p("dup", f);
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_GT(w.duplicated, 0u);
  EXPECT_EQ(o.entries, w.sent + w.duplicated);
  EXPECT_EQ(o.with_copies(2), w.duplicated);
  EXPECT_EQ(o.with_copies(1), w.sent - w.duplicated);
  EXPECT_EQ(o.crc_bad + o.mismatch, 0u);
}

TEST(medusa_faults, corrupt_only_is_caught_by_the_crc) {
  fault_config f;
  f.corrupt = 0.2;
  f.seed = 13;
  faulty_pair p("corrupt", f);
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_GT(w.corrupted, 0u);
  EXPECT_EQ(o.entries, w.sent);
  EXPECT_EQ(o.crc_bad, w.corrupted);
  EXPECT_EQ(p.b->crc_failures(), w.corrupted);
  EXPECT_EQ(o.with_copies(1), w.sent - w.corrupted);
  EXPECT_EQ(o.mismatch, 0u);
}

TEST(medusa_faults, reorder_only) {
  fault_config f;
  f.reorder = 0.2;
  f.seed = 14;
  faulty_pair p("reorder", f);
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_GT(w.reordered, 0u);
  EXPECT_EQ(o.entries, w.sent);
  EXPECT_EQ(o.with_copies(1), w.sent);
  EXPECT_GT(o.inversions(), 0u);
  EXPECT_LE(o.inversions(), w.reordered);
  EXPECT_EQ(o.crc_bad + o.mismatch, 0u);
}

TEST(medusa_faults, reordered_packet_goes_out_after_the_next_one) {
  fault_config f;
  f.reorder = 1.0;
  faulty_pair p("reorder1", f);
  observed o(3);
  p.send(0);
  o.drain(*p.b);
  EXPECT_EQ(o.entries, 0u);
  EXPECT_EQ(p.a->held_on_wire(), 1u);
  p.send(1);  // held too; releases packet 0 behind it
  o.drain(*p.b);
  ASSERT_EQ(o.order, std::vector<uint64_t>({0}));
  // With no packet following, service() lets it go within a bounded number of polls.
  for (uint32_t i = 0; i + 1 < wire::reorder_max_polls; ++i) p.a->service();
  o.drain(*p.b);
  EXPECT_EQ(o.entries, 1u);
  p.a->service();
  o.drain(*p.b);
  EXPECT_EQ(o.order, std::vector<uint64_t>({0, 1}));
  EXPECT_EQ(p.a->held_on_wire(), 0u);
}

TEST(medusa_faults, delay_holds_until_time_advances) {
  sys::manual_time t;
  sys::clock clk(&t);
  fault_config f;
  f.delay = 0.3;
  f.delay_ns = 5000;
  f.seed = 15;
  faulty_pair p("delay", f, &clk);
  constexpr uint64_t n = 100;
  observed o(n);
  for (uint64_t seq = 0; seq < n; ++seq) {
    p.send(seq);
    p.a->service();
  }
  o.drain(*p.b);
  const wire_counters& w = p.a->wire_stats();
  ASSERT_GT(w.delayed, 0u);
  ASSERT_LE(w.delayed, wire::holding_capacity);
  EXPECT_EQ(o.entries, n - w.delayed);
  EXPECT_EQ(p.a->held_on_wire(), w.delayed);
  t.advance(f.delay_ns - 1);
  for (int i = 0; i < 100; ++i) p.a->service();
  o.drain(*p.b);
  EXPECT_EQ(o.entries, n - w.delayed);
  t.advance(1);
  p.a->service();
  o.drain(*p.b);
  EXPECT_EQ(o.entries, n);
  EXPECT_EQ(o.with_copies(1), n);
  EXPECT_GT(o.inversions(), 0u);
  EXPECT_EQ(p.a->held_on_wire(), 0u);
}

TEST(medusa_faults, full_holding_area_delivers_at_once) {
  sys::manual_time t;
  sys::clock clk(&t);
  fault_config f;
  f.delay = 1.0;
  faulty_pair p("holdfull", f, &clk);
  constexpr uint64_t n = wire::holding_capacity + 20;
  observed o(n);
  for (uint64_t seq = 0; seq < n; ++seq) p.send(seq);
  o.drain(*p.b);
  EXPECT_EQ(p.a->wire_stats().delayed, wire::holding_capacity);
  EXPECT_EQ(o.entries, 20u);
  t.advance(f.delay_ns);
  p.a->service();
  o.drain(*p.b);
  EXPECT_EQ(o.with_copies(1), n);
}

TEST(medusa_faults, delay_with_the_real_clock_eventually_delivers) {
  fault_config f;
  f.delay = 1.0;
  f.delay_ns = 200'000;
  faulty_pair p("realdelay", f);
  observed o(1);
  p.send(0);
  const uint64_t deadline = sys::clock::monotonic_ns() + 10'000'000'000ull;
  while (o.entries == 0 && sys::clock::monotonic_ns() < deadline) {
    p.a->service();
    o.drain(*p.b);
  }
  EXPECT_EQ(o.with_copies(1), 1u);
}

TEST(medusa_faults, all_at_once_counters_match_the_receiver) {
  fault_config f;
  f.drop = f.duplicate = f.corrupt = f.reorder = f.delay = 0.08;
  f.delay_ns = 0;  // due at once: released on the next service()
  f.seed = 16;
  faulty_pair p("all", f);
  observed o = run(p, packets);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_GT(w.dropped, 0u);
  EXPECT_GT(w.duplicated, 0u);
  EXPECT_GT(w.corrupted, 0u);
  EXPECT_GT(w.reordered, 0u);
  EXPECT_GT(w.delayed, 0u);
  EXPECT_EQ(p.b->overflow_drops(), 0u);
  EXPECT_EQ(o.entries, w.sent - w.dropped + w.duplicated);
  // A corrupted packet fails the CRC once, or twice when it was also duplicated.
  EXPECT_GE(o.crc_bad, w.corrupted);
  EXPECT_LE(o.crc_bad, 2 * w.corrupted);
  EXPECT_EQ(o.crc_bad, p.b->crc_failures());
  EXPECT_EQ(o.mismatch, 0u);
  EXPECT_EQ(p.b->malformed(), 0u);
  EXPECT_GT(o.inversions(), 0u);
  uint64_t intact = 0;
  for (int c : o.copies) {
    EXPECT_LE(c, 2);
    intact += static_cast<uint64_t>(c);
  }
  EXPECT_EQ(intact + o.crc_bad, o.entries);
}

TEST(medusa_faults, same_seed_same_run) {
  fault_config f;
  f.drop = f.duplicate = f.corrupt = f.reorder = 0.1;
  f.seed = 99;
  faulty_pair p1("seed1", f), p2("seed2", f);
  observed o1 = run(p1, 1000), o2 = run(p2, 1000);
  EXPECT_EQ(o1.order, o2.order);
  EXPECT_EQ(o1.crc_bad, o2.crc_bad);
  EXPECT_EQ(p1.a->wire_stats().dropped, p2.a->wire_stats().dropped);
  f.seed = 100;
  faulty_pair p3("seed3", f);
  observed o3 = run(p3, 1000);
  EXPECT_NE(o1.order, o3.order);
}

TEST(medusa_faults, faults_and_overflow_together) {
  fault_config f;
  f.duplicate = 0.5;
  f.seed = 17;
  faulty_pair p("dupoverflow", f, nullptr, 8);
  for (uint64_t seq = 0; seq < 40; ++seq) p.send(seq);
  observed o(40);
  o.drain(*p.b);
  const wire_counters& w = p.a->wire_stats();
  EXPECT_EQ(o.entries, 8u);
  EXPECT_EQ(p.b->overflow_drops(), w.sent + w.duplicated - 8);
}

}  // namespace
}  // namespace hpam::nic
