// Headless cells (card_setup::headless_cells, medusa::entry_headless): a
// packet carried in its RX_READY cell on a wire without faults or CRC
// leaves its wire header out; the cell's head stands where it was, the
// entry gives source and length, and every byte after the header arrives
// in place. A longer packet, a faulty wire, a CRC or a card not asked keep
// the full form. A forged headless entry is checked as any other: a length
// its cell cannot hold, a source outside the job, or one a CRC-checking
// card receives, is refused and counted.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "medusa_test_util.hpp"
#include "nic/medusa/medusa_card.hpp"

namespace hpam::nic {
namespace {

using namespace test;
using medusa::encode_entry;

// A pair of cards (a sends to b) with headless cells asked as given.
struct headless_pair {
  explicit headless_pair(const char* tag, bool asked = true, bool crc = false,
                         fault_config faults = {}) {
    const std::string job = unique_job(tag);
    card_setup s0 = make_setup(job, 2, 0, 4, 8, 1024);
    card_setup s1 = make_setup(job, 2, 1, 4, 8, 1024);
    s0.headless_cells = s1.headless_cells = asked;
    s0.crc = s1.crc = crc;
    s0.faults = faults;
    a = std::make_unique<medusa_card>(s0);
    b = std::make_unique<medusa_card>(s1);
    a->attach_peer(1);
    b->attach_peer(0);
    EXPECT_TRUE(a->claim_tx_block(t));
  }
  // Sends a packet of len bytes tagged `tag`; b receives it (false: nothing).
  bool send_and_receive(uint32_t len, uint64_t tag, rx_packet& r) {
    build_exact(a->tx_block(t), len, tag);
    a->launch(1, t, len);
    return b->receive(r);
  }
  std::unique_ptr<medusa_card> a, b;
  uint32_t t = 0;
};

// The entry in a cell's head (its sequence, then its entry).
uint64_t entry_of_cell(const std::byte* cell) {
  uint64_t e;
  std::memcpy(&e, cell + sizeof(uint64_t), sizeof e);
  return e;
}

bool full_header(const rx_packet& r, uint32_t len) {
  wire_header h;
  std::memcpy(&h, r.data, sizeof h);
  return h.length == len && h.src == 0 && h.dst == 1;
}

TEST(medusa_headless, a_packet_in_its_cell_travels_without_its_wire_header) {
  headless_pair p("headless");
  // Up to the whole cell (128 bytes here): its head stands where the wire
  // header was, so 16 bytes more than a packet with its header can have.
  for (uint32_t len : {uint32_t{payload_offset}, 48u, 64u, 72u, 100u, 112u, 113u, 120u, 128u}) {
    rx_packet r{};
    ASSERT_TRUE(p.send_and_receive(len, len, r)) << len;
    EXPECT_TRUE(r.crc_ok);
    EXPECT_EQ(r.length, len);
    EXPECT_EQ(r.src, 0);
    EXPECT_EQ(r.block, medusa_card::no_block);
    EXPECT_TRUE(exact(r, len, len)) << len;  // every byte after the wire header
    // The first wire_header_size bytes are the cell's head: its entry.
    const uint64_t e = entry_of_cell(r.data);
    EXPECT_EQ(medusa::entry_block(e), medusa::entry_headless);
    EXPECT_EQ(medusa::entry_length(e), len);
    EXPECT_EQ(medusa::entry_source(e), 0u);
    p.b->release(r);
  }
  // Longer than a cell holds: in a block, its wire header with it.
  for (uint32_t len : {129u, 600u}) {
    rx_packet r{};
    ASSERT_TRUE(p.send_and_receive(len, 9, r)) << len;
    EXPECT_TRUE(r.crc_ok);
    EXPECT_NE(r.block, medusa_card::no_block) << len;
    EXPECT_TRUE(exact(r, len, 9)) << len;
    EXPECT_TRUE(full_header(r, len)) << len;
    p.b->release(r);
  }
  EXPECT_EQ(p.b->malformed(), 0u);
}

// launch writes an outbound block's wire header only when something reads
// it: not for a packet carried headless (nor for its relaunch), but for one
// in a block, and for one through TX_READY (the engine reads the
// destination there).
TEST(medusa_headless, the_wire_header_is_written_only_where_it_is_read) {
  const auto header_written = [](const std::byte* pkt, uint32_t len) {
    wire_header h;
    std::memcpy(&h, pkt, sizeof h);
    return h.length == len && h.src == 0 && h.dst == 1;
  };
  for (bool direct : {true, false}) {
    headless_pair p(direct ? "headless_hdr" : "headless_hdr_txready");
    if (!direct) {  // the same pair, launches through TX_READY
      card_setup s0 = make_setup(unique_job("headless_hdr_tx"), 2, 0, 4, 8, 1024);
      card_setup s1 = s0;
      s1.my_proc = 1;
      s0.headless_cells = s1.headless_cells = true;
      s0.direct_tx = false;
      p.a = std::make_unique<medusa_card>(s0);
      p.b = std::make_unique<medusa_card>(s1);
      p.a->attach_peer(1);
      p.b->attach_peer(0);
      ASSERT_TRUE(p.a->claim_tx_block(p.t));
    }
    for (uint32_t len : {72u, 128u, 600u}) {
      std::byte* pkt = p.a->tx_block(p.t);
      std::memset(pkt, 0, wire_header_size);
      rx_packet r{};
      ASSERT_TRUE(p.send_and_receive(len, len, r));
      EXPECT_TRUE(exact(r, len, len));
      EXPECT_EQ(header_written(pkt, len), !direct || len == 600u) << direct << " " << len;
      p.b->release(r);
      std::memset(pkt, 0, wire_header_size);
      p.a->relaunch(1, p.t, len);  // a copy sent again: the same rule
      ASSERT_TRUE(p.b->receive(r));
      EXPECT_TRUE(exact(r, len, len));
      EXPECT_EQ(header_written(pkt, len), !direct || len == 600u) << direct << " " << len;
      p.b->release(r);
    }
    EXPECT_EQ(p.b->malformed(), 0u);
    EXPECT_EQ(p.a->malformed(), 0u);
  }
}

TEST(medusa_headless, not_asked_a_crc_or_a_faulty_wire_keeps_the_wire_header) {
  fault_config reorder;
  reorder.reorder = 1e-9;  // a wire that may hold a packet back, which it never does here
  struct variant {
    bool asked, crc;
    fault_config faults;
  };
  for (const variant& v :
       {variant{false, false, {}}, variant{true, true, {}}, variant{true, false, reorder}}) {
    headless_pair p("headless_off", v.asked, v.crc, v.faults);
    for (uint32_t len : {72u, 112u, 120u}) {  // 120: in a block, not in the cell
      rx_packet r{};
      ASSERT_TRUE(p.send_and_receive(len, 3, r));
      EXPECT_TRUE(r.crc_ok);
      EXPECT_TRUE(exact(r, len, 3));
      EXPECT_TRUE(full_header(r, len)) << v.asked << v.crc << " " << len;
      EXPECT_EQ(r.block == medusa_card::no_block, len <= 112u) << len;
      p.b->release(r);
    }
  }
}

TEST(medusa_headless, forged_headless_entries_are_checked_refused_and_counted) {
  headless_pair p("headless_forged");
  std::byte packet[256]{};
  build_exact(packet, 72, 5);
  // The card's own form, written by hand (the cell holds the packet from its
  // wire_header_size-th byte on, in place): taken like any packet (the
  // layers above check what is in it).
  ASSERT_TRUE(
      forge_rx_ready(*p.b, encode_entry(medusa::entry_headless, 72, 0), packet + wire_header_size));
  rx_packet r{};
  ASSERT_TRUE(p.b->receive(r));
  EXPECT_TRUE(r.crc_ok);
  EXPECT_TRUE(exact(r, 72, 5));
  p.b->release(r);
  // A length no cell holds, shorter than a wire header, or a source outside the job.
  uint64_t refused = 0;
  const uint32_t cell = p.b->inline_bytes() + wire_header_size;  // the whole cell
  for (uint64_t e : {encode_entry(medusa::entry_headless, cell + 1, 0),
                     encode_entry(medusa::entry_headless, wire_header_size - 1, 0),
                     encode_entry(medusa::entry_headless, 72, 2),
                     encode_entry(medusa::entry_headless, 72, 0xFFFF)}) {
    ASSERT_TRUE(forge_rx_ready(*p.b, e, packet));
    rx_packet bad{};
    ASSERT_TRUE(p.b->receive(bad));
    EXPECT_FALSE(bad.crc_ok);
    EXPECT_TRUE(bad.rejected);
    EXPECT_EQ(p.b->malformed(), ++refused);
    p.b->release(bad);
  }
  // A card that checks CRCs takes no headless entry: its senders never make one.
  headless_pair c("headless_crc", true, true);
  ASSERT_TRUE(forge_rx_ready(*c.b, encode_entry(medusa::entry_headless, 72, 0), packet));
  rx_packet bad{};
  ASSERT_TRUE(c.b->receive(bad));
  EXPECT_FALSE(bad.crc_ok);
  EXPECT_TRUE(bad.rejected);
  EXPECT_EQ(c.b->malformed(), 1u);
  c.b->release(bad);
  // Cells still come back: the pair goes on.
  ASSERT_TRUE(p.send_and_receive(64, 6, r));
  EXPECT_TRUE(exact(r, 64, 6));
  p.b->release(r);
}

}  // namespace
}  // namespace hpam::nic
