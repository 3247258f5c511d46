// Delivery by reference (card_setup::deliver_by_reference): a packet longer
// than an RX_READY cell, launched the first time on a wire without faults,
// stays in the sender's outbound block and the destination reads it there;
// a relaunch, a faulty wire or a card not asked to always copies. Entries
// that name outbound blocks are checked like any other: the block must be
// one of the named sender's, and the packet in it must pass the CRC and the
// wire header's check.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "medusa_test_util.hpp"
#include "nic/medusa/medusa_card.hpp"

namespace hpam::nic {
namespace {

using namespace test;
using medusa::encode_entry;

constexpr uint32_t block = 1024;
constexpr uint32_t long_packet = 600;  // longer than the 112 bytes a cell holds

struct by_reference_pair : card_pair {
  explicit by_reference_pair(const char* tag, bool asked = true, fault_config faults = {},
                             bool direct_tx = true, bool b_attaches_a = true)
      : card_pair(tag, 4, 8, block, faults, nullptr, direct_tx, asked, b_attaches_a) {}
  // Launches (or relaunches) a packet of len bytes tagged `tag` in a's block t.
  void send(uint32_t t, uint32_t len, uint64_t tag, bool again = false) {
    build_exact(a->tx_block(t), len, tag);
    if (again)
      a->relaunch(1, t, len);
    else
      a->launch(1, t, len);
  }
};

TEST(medusa_by_reference, a_long_packet_is_read_in_the_senders_block) {
  for (bool direct : {true, false}) {
    by_reference_pair p("byref", true, {}, direct);
    ASSERT_TRUE(p.a->delivers_by_reference());
    uint32_t t;
    ASSERT_TRUE(p.a->claim_tx_block(t));
    const uint64_t free_blocks = p.b->rx_free_fifo().size();
    for (uint32_t len : {113u, long_packet, block}) {
      p.send(t, len, len);
      rx_packet r{};
      ASSERT_TRUE(p.b->receive(r));
      EXPECT_TRUE(exact(r, len, len)) << len;
      EXPECT_EQ(r.src, 0);
      EXPECT_EQ(r.block, medusa_card::no_block);  // nothing of b's holds it
      EXPECT_EQ(p.b->rx_free_fifo().size(), free_blocks);
      // The bytes b reads are the sender's block itself.
      build_exact(p.a->tx_block(t), len, len + 1);
      EXPECT_TRUE(exact(r, len, len + 1));
      p.b->release(r);
      EXPECT_EQ(p.b->rx_free_fifo().size(), free_blocks);  // only the cell comes back
    }
    EXPECT_EQ(p.a->by_reference_sends(), 3u);
    // A packet its cell holds still travels in the cell.
    p.send(t, 100, 7);
    rx_packet r{};
    ASSERT_TRUE(p.b->receive(r));
    build_exact(p.a->tx_block(t), 100, 8);
    EXPECT_TRUE(exact(r, 100, 7));
    p.b->release(r);
    EXPECT_EQ(p.a->by_reference_sends(), 3u);
  }
}

TEST(medusa_by_reference, a_relaunch_is_a_copy) {
  by_reference_pair p("byref_again");
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  const uint64_t free_blocks = p.b->rx_free_fifo().size();
  p.send(t, long_packet, 1);
  p.send(t, long_packet, 1, true);
  rx_packet first{}, again{};
  ASSERT_TRUE(p.b->receive(first));
  ASSERT_TRUE(p.b->receive(again));
  EXPECT_EQ(p.a->by_reference_sends(), 1u);
  EXPECT_NE(again.block, medusa_card::no_block);  // one of b's inbound blocks
  EXPECT_EQ(p.b->rx_free_fifo().size(), free_blocks - 1);
  // The sender, answered through the first, writes its block again: the
  // copy is unchanged.
  build_exact(p.a->tx_block(t), long_packet, 2);
  EXPECT_TRUE(exact(again, long_packet, 1));
  EXPECT_TRUE(exact(first, long_packet, 2));
  p.b->release(first);
  p.b->release(again);
  EXPECT_EQ(p.b->rx_free_fifo().size(), free_blocks);
}

TEST(medusa_by_reference, only_when_asked_and_on_a_clean_wire) {
  fault_config lossy;
  lossy.drop = 1e-9;
  for (const auto& [asked, faults] : {std::pair{false, fault_config{}}, std::pair{true, lossy}}) {
    by_reference_pair p("byref_off", asked, faults);
    EXPECT_FALSE(p.a->delivers_by_reference());
    uint32_t t;
    ASSERT_TRUE(p.a->claim_tx_block(t));
    p.send(t, long_packet, 3);
    rx_packet r{};
    ASSERT_TRUE(p.b->receive(r));
    EXPECT_NE(r.block, medusa_card::no_block);
    build_exact(p.a->tx_block(t), long_packet, 4);
    EXPECT_TRUE(exact(r, long_packet, 3));
    p.b->release(r);
    EXPECT_EQ(p.a->by_reference_sends(), 0u);
  }
}

TEST(medusa_by_reference, a_sender_never_attached_is_mapped_at_its_first_packet) {
  by_reference_pair p("byref_attach", true, {}, true, false);
  ASSERT_FALSE(p.b->attached(0));
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  p.send(t, long_packet, 5);
  rx_packet r{};
  ASSERT_TRUE(p.b->receive(r));
  EXPECT_TRUE(p.b->attached(0));
  EXPECT_TRUE(exact(r, long_packet, 5));
  p.b->release(r);
}

// An entry naming a process of the job whose card does not exist (yet, or
// any more) is refused at once: the poll does not wait the attach time out.
TEST(medusa_by_reference, an_entry_naming_a_card_that_is_not_there_is_refused_at_once) {
  const std::string job = unique_job("byref_absent");
  card_setup s1 = make_setup(job, 3, 1, 4, 8, block);
  s1.attach_timeout_ms = 60'000;
  medusa_card b(s1);
  ASSERT_TRUE(forge_rx_ready(b, encode_entry(0, long_packet, 2)));
  const auto start = std::chrono::steady_clock::now();
  rx_packet r{};
  ASSERT_TRUE(b.receive(r));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_FALSE(r.crc_ok);
  EXPECT_FALSE(b.attached(2));
  EXPECT_EQ(b.malformed(), 1u);
  b.release(r);
}

// Forged entries in the by-reference form, on b's RX_READY: each is
// refused and counted, and none gives anything back to RX_FREE.
TEST(medusa_by_reference, forged_entries_naming_outbound_blocks_are_checked) {
  by_reference_pair p("byref_forged");
  medusa_card& b = *p.b;
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  const uint64_t free_blocks = b.rx_free_fifo().size();
  auto refused = [&](uint64_t entry) {
    if (!forge_rx_ready(b, entry)) return ::testing::AssertionFailure() << "RX_READY full";
    rx_packet r{};
    if (!b.receive(r)) return ::testing::AssertionFailure() << "nothing received";
    const bool ok = r.crc_ok;
    b.release(r);
    if (ok) return ::testing::AssertionFailure() << "accepted";
    if (b.rx_free_fifo().size() != free_blocks) return ::testing::AssertionFailure() << "freed";
    return ::testing::AssertionSuccess();
  };
  const uint64_t malformed = b.malformed(), crc = b.crc_failures();
  // Not one of the sender's outbound blocks (nor one of b's inbound
  // ones); a source outside the job.
  EXPECT_TRUE(refused(encode_entry(p.a->tx_blocks() + p.b->rx_blocks(), long_packet, 0)));
  EXPECT_TRUE(refused(encode_entry(t, long_packet, 2)));
  EXPECT_TRUE(refused(encode_entry(t, long_packet, 0xffff)));
  EXPECT_EQ(b.malformed(), malformed + 3);
  // A real outbound block holding no packet: the CRC fails.
  EXPECT_TRUE(refused(encode_entry(t, long_packet, 0)));
  EXPECT_EQ(b.crc_failures(), crc + 1);
  // A packet the sender wrote for another destination (itself): the wire
  // header names it.
  const uint32_t len = build_exact(p.a->tx_block(t), long_packet, 6);
  stamp_wire_header(p.a->tx_block(t), len, 0, 0, true);
  EXPECT_TRUE(refused(encode_entry(t, len, 0)));
  EXPECT_EQ(b.malformed(), malformed + 4);
  // A packet once sent to b, named again: taken as the wire's duplicate
  // would be (the protocol above answers it from its stored reply).
  p.send(t, long_packet, 9);
  for (int copy = 0; copy < 2; ++copy) {
    if (copy) {
      ASSERT_TRUE(forge_rx_ready(b, encode_entry(t, long_packet, 0)));
    }
    rx_packet r{};
    ASSERT_TRUE(b.receive(r));
    EXPECT_TRUE(exact(r, long_packet, 9));
    b.release(r);
  }
  EXPECT_EQ(b.rx_free_fifo().size(), free_blocks);
}

}  // namespace
}  // namespace hpam::nic
