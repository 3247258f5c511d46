// The emulated Medusa card: FIFO entries, packet exchange between cards (in
// one process and across fork), overflow drops, CRC, and rejection of forged
// entries. Wire faults are in test_medusa_faults.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "medusa_test_util.hpp"
#include "nic/medusa/card_memory.hpp"
#include "nic/medusa/medusa_card.hpp"

namespace hpam::nic {
namespace {

using namespace test;
using medusa::encode_entry;
using medusa::entry_block;
using medusa::entry_length;

TEST(medusa_entry, encode_decode_round_trip) {
  const uint32_t values[] = {0,     1,     2,        63,        64,        4095,      8192,
                             65535, 65536, 1u << 20, 0x7fffffu, 0x800000u, 0xfffffeu, 0xffffffu};
  const uint32_t sources[] = {0, 1, 2, 255, 256, 65534, 65535};
  for (uint32_t b : values)
    for (uint32_t len : values)
      for (uint32_t src : sources) {
        const uint64_t e = medusa::encode_entry(b, len, src);
        EXPECT_EQ(entry_block(e), b);
        EXPECT_EQ(entry_length(e), len);
        EXPECT_EQ(medusa::entry_source(e), src);
      }
  EXPECT_NE(encode_entry(1, 0), encode_entry(0, 1));
  EXPECT_NE(medusa::encode_entry(1, 0, 0), medusa::encode_entry(0, 0, 1));
  // Out-of-range inputs stay inside their own field (a forged entry cannot
  // move into another): at most the field's largest value, never in range.
  EXPECT_EQ(entry_block(encode_entry(0xffffffffu, 0)), medusa::entry_field_mask);
  EXPECT_EQ(entry_length(encode_entry(0, 0xffffffffu)), medusa::entry_field_mask);
  EXPECT_EQ(medusa::entry_source(encode_entry(0xffffffffu, 0xffffffffu)), 0u);
}

TEST(medusa_layout, regions_aligned_and_disjoint) {
  for (uint32_t tx : {0u, 1u, 3u, 64u, 1000u})
    for (uint32_t rx : {0u, 1u, 5u, 64u, 777u}) {
      const auto l = medusa::compute_layout(8192, tx, rx, nic::card_setup{}.rx_ready_cell);
      EXPECT_GE(l.tx_fifo_capacity, tx);
      EXPECT_GE(l.rx_fifo_capacity, rx);
      EXPECT_TRUE(sys::ring_math::is_power_of_two(l.tx_fifo_capacity));
      EXPECT_TRUE(sys::ring_math::is_power_of_two(l.rx_fifo_capacity));
      EXPECT_GE(l.tx_ready_offset, sizeof(medusa::card_header));
      EXPECT_GE(l.tx_free_offset,
                l.tx_ready_offset + sys::spsc_fifo::bytes_for(l.tx_fifo_capacity));
      EXPECT_GE(l.rx_free_offset, l.tx_free_offset + sys::spsc_fifo::bytes_for(l.tx_fifo_capacity));
      EXPECT_GE(l.rx_ready_offset,
                l.rx_free_offset + sys::mpmc_fifo::bytes_for(l.rx_fifo_capacity));
      EXPECT_GE(l.vram_offset, l.rx_ready_offset + sys::mpmc_fifo::bytes_for(l.rx_fifo_capacity));
      EXPECT_EQ(l.vram_offset % 64, 0u);
      EXPECT_EQ(l.size, l.vram_offset + uint64_t{tx + rx} * 8192);
    }
}

TEST(medusa_card, blocks_start_on_their_fifos) {
  const std::string job = unique_job("start");
  medusa_card c(make_setup(job, 1, 0, 5, 7));
  EXPECT_EQ(c.rx_free_fifo().size(), 7u);
  rx_packet none{};
  EXPECT_FALSE(c.receive(none));
  std::vector<bool> seen(5, false);
  uint32_t b;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.claim_tx_block(b));
    ASSERT_LT(b, 5u);
    EXPECT_FALSE(seen[b]);
    seen[b] = true;
  }
  EXPECT_FALSE(c.claim_tx_block(b));
  EXPECT_EQ(c.header().magic, medusa::card_magic);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.tx_block(0)) % 64, 0u);
}

TEST(medusa_card, rejects_bad_setup) {
  const std::string job = unique_job("badsetup");
  EXPECT_THROW(medusa_card(make_setup(job, 2, 2, 1, 1)), std::invalid_argument);
  EXPECT_THROW(medusa_card(make_setup(job, 1, 0, 1, 1, 1000)), std::invalid_argument);
  EXPECT_THROW(medusa_card(make_setup(job, 1, 0, 1, 1, 32)), std::invalid_argument);
  try {  // the range from the card's constants, in bytes
    medusa_card c(make_setup(job, 1, 0, 1, 1, 32));
    ADD_FAILURE() << "block_size 32 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block_size must be a power of two in [" +
                                         std::to_string(medusa::min_block_size) + ", " +
                                         std::to_string(medusa::max_block_size) + "], got 32"),
              std::string::npos)
        << e.what();
  }
  card_setup s = make_setup(job, 1, 0, 1, 1);
  s.faults.drop = 1.5;
  EXPECT_THROW(medusa_card{s}, std::invalid_argument);
  for (uint32_t cell : {0u, 8u, 96u, 8192u}) {
    card_setup c = make_setup(job, 1, 0, 1, 1);
    c.rx_ready_cell = cell;
    EXPECT_THROW(medusa_card{c}, std::invalid_argument) << cell;
  }
}

TEST(medusa_card, two_cards_exchange_byte_exact) {
  card_pair p("xchg");
  uint32_t ta, tb;
  ASSERT_TRUE(p.a->claim_tx_block(ta));
  ASSERT_TRUE(p.b->claim_tx_block(tb));
  const uint32_t bs = p.a->block_size();
  for (uint64_t seq = 0; seq < 3000; ++seq) {
    // A -> B: the same block is rewritten and relaunched each time.
    const uint32_t len = build_packet(p.a->tx_block(ta), seq, bs);
    p.a->launch(1, ta, len);
    rx_packet r{};
    ASSERT_TRUE(p.b->receive(r));
    ASSERT_TRUE(r.crc_ok);
    ASSERT_EQ(check_packet(r, 0, 1, bs), seq);
    if (len <= p.b->inline_bytes()) {
      ASSERT_EQ(r.block, medusa_card::no_block);  // in its cell, no block taken
    } else {
      ASSERT_GE(r.block, p.b->tx_blocks());
      ASSERT_LT(r.block, p.b->tx_blocks() + p.b->rx_blocks());
    }
    // B -> A echoes a different sequence.
    const uint32_t len2 = build_packet(p.b->tx_block(tb), seq + 100000, bs);
    p.b->release(r);
    p.b->launch(0, tb, len2);
    ASSERT_TRUE(p.a->receive(r));
    ASSERT_TRUE(r.crc_ok);
    ASSERT_EQ(check_packet(r, 1, 0, bs), seq + 100000);
    p.a->release(r);
    ASSERT_FALSE(p.a->receive(r));
  }
  EXPECT_EQ(p.a->wire_stats().sent, 3000u);
  EXPECT_EQ(p.b->wire_stats().sent, 3000u);
  EXPECT_EQ(p.a->overflow_drops() + p.b->overflow_drops(), 0u);
  EXPECT_EQ(p.a->malformed() + p.b->malformed(), 0u);
  EXPECT_EQ(p.b->rx_free_fifo().size(), 64u);
}

// An idle engine takes a launched block at once (direct_tx); switched off,
// every packet goes TX_READY -> engine -> TX_FREE. Either way the same bytes
// arrive and, between launches, both TX FIFOs are empty.
TEST(medusa_card, direct_and_fifo_launch_deliver_the_same) {
  for (const bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "direct_tx" : "TX FIFOs");
    card_pair p("direct", 4, 8, 1024, {}, nullptr, direct);
    uint32_t t;
    ASSERT_TRUE(p.a->claim_tx_block(t));
    for (uint64_t seq = 0; seq < 20; ++seq) {
      p.a->launch(1, t, build_packet(p.a->tx_block(t), seq, p.a->block_size()));
      EXPECT_EQ(p.a->tx_ready_fifo().size(), 0u);
      rx_packet r{};
      ASSERT_TRUE(p.b->receive(r));
      ASSERT_TRUE(r.crc_ok);
      EXPECT_EQ(check_packet(r, 0, 1, p.a->block_size()), seq);
      p.b->release(r);
    }
    EXPECT_EQ(p.a->direct_sends(), direct ? 20u : 0u);
    EXPECT_EQ(p.a->wire_stats().sent, 20u);
    EXPECT_EQ(p.a->malformed(), 0u);
    uint32_t rest = 0, b;
    while (p.a->claim_tx_block(b)) ++rest;
    EXPECT_EQ(rest, 3u);  // the unclaimed blocks, the launched one never among them
  }
}

// An entry already on TX_READY is transmitted first: a launch finding the
// engine busy goes through the FIFOs behind it, not around it.
TEST(medusa_card, launch_behind_a_queued_entry_keeps_fifo_order) {
  card_pair p("queued", 4, 8);
  uint32_t first, second;
  ASSERT_TRUE(p.a->claim_tx_block(first));
  ASSERT_TRUE(p.a->claim_tx_block(second));
  const uint32_t bs = p.a->block_size();
  const uint32_t len = build_packet(p.a->tx_block(first), 1, bs);
  p.a->launch(1, first, len);  // writes the wire header of `first`
  rx_packet r{};
  ASSERT_TRUE(p.b->receive(r));
  p.b->release(r);
  // The processor queues `first` again by hand and, before the engine ran, launches `second`.
  ASSERT_TRUE(p.a->tx_ready_fifo().push(encode_entry(first, len)));
  p.a->launch(1, second, build_packet(p.a->tx_block(second), 2, bs));
  EXPECT_EQ(p.a->direct_sends(), 1u);  // only the first launch
  for (uint64_t want : {1u, 2u}) {
    ASSERT_TRUE(p.b->receive(r));
    ASSERT_TRUE(r.crc_ok);
    EXPECT_EQ(check_packet(r, 0, 1, bs), want);
    p.b->release(r);
  }
  EXPECT_FALSE(p.b->receive(r));
  EXPECT_EQ(p.a->tx_ready_fifo().size(), 0u);
}

TEST(medusa_card, loopback_to_myself) {
  medusa_card c(make_setup(unique_job("loop"), 3, 2, 2, 4));
  uint32_t t;
  ASSERT_TRUE(c.claim_tx_block(t));
  const uint32_t len = build_packet(c.tx_block(t), 42, c.block_size());
  c.launch(2, t, len);
  rx_packet r{};
  ASSERT_TRUE(c.receive(r));
  EXPECT_TRUE(r.crc_ok);
  EXPECT_EQ(check_packet(r, 2, 2, c.block_size()), 42u);
  c.release(r);
}

TEST(medusa_card, many_outstanding_blocks_keep_their_identity) {
  card_pair p("many", 8, 64);
  uint32_t blocks[8];
  for (auto& b : blocks) ASSERT_TRUE(p.a->claim_tx_block(b));
  const uint32_t bs = p.a->block_size();
  for (uint64_t round = 0; round < 50; ++round) {
    for (uint32_t i = 0; i < 8; ++i)
      p.a->launch(1, blocks[i], build_packet(p.a->tx_block(blocks[i]), round * 8 + i, bs));
    rx_packet r{};
    for (uint32_t i = 0; i < 8; ++i) {
      ASSERT_TRUE(p.b->receive(r));
      ASSERT_TRUE(r.crc_ok);
      EXPECT_EQ(check_packet(r, 0, 1, bs), round * 8 + i);
      p.b->release(r);
    }
    // Launch never hands a descriptor's block to anyone else.
    uint32_t extra;
    EXPECT_FALSE(p.a->claim_tx_block(extra));
  }
}

TEST(medusa_card, partial_claim_then_launch_keeps_unclaimed_blocks) {
  card_pair p("partial", 6, 8);
  uint32_t mine;
  ASSERT_TRUE(p.a->claim_tx_block(mine));
  for (uint64_t seq = 0; seq < 5; ++seq) {
    p.a->launch(1, mine, build_packet(p.a->tx_block(mine), seq, p.a->block_size()));
    rx_packet r{};
    ASSERT_TRUE(p.b->receive(r));
    p.b->release(r);
  }
  std::vector<uint32_t> rest;
  uint32_t b;
  while (p.a->claim_tx_block(b)) rest.push_back(b);
  ASSERT_EQ(rest.size(), 5u);
  for (uint32_t x : rest) EXPECT_NE(x, mine);
}

// A packet that fits its RX_READY cell takes no block: while the receiver
// holds every cell, the next one is dropped (counted), RX_FREE untouched;
// once cells come back, packets flow again.
TEST(medusa_card, full_rx_ready_drops_and_counts) {
  card_pair p("overflow", 4, 3);  // 3 blocks, RX_READY of 4 cells
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  const uint32_t cells = 4;
  for (uint64_t tag = 0; tag < 10; ++tag) p.a->launch(1, t, build_exact(p.a->tx_block(t), 72, tag));
  EXPECT_EQ(p.b->overflow_drops(), 10u - cells);
  EXPECT_EQ(p.a->overflow_drops(), 0u);
  EXPECT_EQ(p.b->rx_free_fifo().size(), 3u);  // no block taken for a packet in its cell
  std::vector<rx_packet> got;
  rx_packet r{};
  while (p.b->receive(r)) {
    EXPECT_TRUE(exact(r, 72, got.size()));  // the first four got through
    EXPECT_EQ(r.block, medusa_card::no_block);
    got.push_back(r);
  }
  ASSERT_EQ(got.size(), cells);
  // Popped but not released: the cells are still the receiver's.
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 72, 98));
  EXPECT_EQ(p.b->overflow_drops(), 11u - cells);
  for (auto& g : got) p.b->release(g);
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 72, 99));
  ASSERT_TRUE(p.b->receive(r));
  EXPECT_TRUE(exact(r, 72, 99));
  p.b->release(r);
  EXPECT_EQ(p.b->overflow_drops(), 11u - cells);
  EXPECT_EQ(p.b->malformed(), 0u);
}

// A packet longer than a cell claims its cell, then a block: with RX_FREE
// empty it is dropped (counted by the sender in the receiver's
// overflow_drops) and its cell published void, which the receiver pops as
// a refused packet (not malformed, not a CRC failure) and releases; the
// packets around it come through.
TEST(medusa_card, empty_rx_free_publishes_a_void_entry) {
  card_pair p("void", 4, 2);  // 2 blocks, RX_READY of 2 cells
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  constexpr uint32_t big = 300, small = 40;
  p.a->launch(1, t, build_exact(p.a->tx_block(t), big, 1));
  rx_packet held{};
  ASSERT_TRUE(p.b->receive(held));
  ASSERT_TRUE(exact(held, big, 1));
  // The block a second long packet would take, gone (as if another sender held it).
  uint64_t taken;
  ASSERT_TRUE(p.b->rx_free_fifo().pop(taken));
  EXPECT_EQ(p.b->rx_free_fifo().size(), 0u);
  p.a->launch(1, t, build_exact(p.a->tx_block(t), big, 2));
  EXPECT_EQ(p.b->overflow_drops(), 1u);
  rx_packet v{};
  ASSERT_TRUE(p.b->receive(v));
  EXPECT_FALSE(v.crc_ok);
  EXPECT_TRUE(v.rejected);
  EXPECT_EQ(v.length, 0u);
  EXPECT_EQ(v.block, medusa_card::no_block);
  ASSERT_NE(v.data, nullptr);
  EXPECT_EQ(p.b->malformed(), 0u);
  EXPECT_EQ(p.b->crc_failures(), 0u);
  // Both cells held: the next packet finds none.
  p.a->launch(1, t, build_exact(p.a->tx_block(t), small, 3));
  EXPECT_EQ(p.b->overflow_drops(), 2u);
  p.b->release(held);  // its cell and its block
  EXPECT_EQ(p.b->rx_free_fifo().size(), 1u);
  p.a->launch(1, t, build_exact(p.a->tx_block(t), small, 4));  // a cell, no block needed
  EXPECT_EQ(p.b->rx_free_fifo().size(), 1u);
  rx_packet r{};
  ASSERT_TRUE(p.b->receive(r));
  EXPECT_TRUE(exact(r, small, 4));
  p.b->release(r);
  p.b->release(v);  // the void entry's cell, and the one released before it, go back
  ASSERT_TRUE(p.b->rx_free_fifo().push(taken));
  EXPECT_EQ(p.b->rx_free_fifo().size(), 2u);
  p.a->launch(1, t, build_exact(p.a->tx_block(t), big, 5));
  ASSERT_TRUE(p.b->receive(r));
  EXPECT_TRUE(exact(r, big, 5));
  p.b->release(r);
  EXPECT_FALSE(p.b->receive(r));
  EXPECT_EQ(p.b->overflow_drops(), 2u);
  EXPECT_EQ(p.b->malformed(), 0u);
  EXPECT_EQ(p.a->malformed(), 0u);
}

TEST(medusa_card, crc_detects_a_flipped_bit) {
  card_pair p("crc");
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  const uint32_t bs = p.a->block_size();
  const uint32_t len = build_packet(p.a->tx_block(t), 7, bs);
  // Every single-bit flip, anywhere in the packet, is caught.
  for (uint32_t bit = 0; bit < len * 8; bit += 13) {
    p.a->launch(1, t, build_packet(p.a->tx_block(t), 7, bs));
    rx_packet r{};
    ASSERT_TRUE(p.b->receive(r));
    ASSERT_TRUE(r.crc_ok);
    auto* bytes = const_cast<std::byte*>(r.data);
    bytes[bit / 8] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
    // Re-deliver the damaged packet through RX_READY as the card would.
    ASSERT_TRUE(redeliver(*p.b, r));
    rx_packet bad{};
    ASSERT_TRUE(p.b->receive(bad));
    EXPECT_FALSE(bad.crc_ok) << "bit " << bit;
    p.b->release(bad);
  }
  EXPECT_GT(p.b->crc_failures(), 0u);
}

TEST(medusa_card, crc_off_still_checks_the_header) {
  const std::string job = unique_job("nocrc");
  card_setup s0 = make_setup(job, 2, 0, 2, 4), s1 = make_setup(job, 2, 1, 2, 4);
  s0.crc = s1.crc = false;
  medusa_card a(s0), b(s1);
  a.attach_peer(1);
  uint32_t t;
  ASSERT_TRUE(a.claim_tx_block(t));
  a.launch(1, t, build_packet(a.tx_block(t), 5, a.block_size()));
  rx_packet r{};
  ASSERT_TRUE(b.receive(r));
  EXPECT_TRUE(r.crc_ok);
  EXPECT_EQ(check_packet(r, 0, 1, b.block_size()), 5u);
  wire_header h;
  std::memcpy(&h, r.data, sizeof h);
  EXPECT_EQ(h.crc, 0u);
  // A header naming another destination is rejected even without CRC.
  h.dst = 0;
  std::memcpy(const_cast<std::byte*>(r.data), &h, sizeof h);
  ASSERT_TRUE(redeliver(b, r));
  rx_packet bad{};
  ASSERT_TRUE(b.receive(bad));
  EXPECT_FALSE(bad.crc_ok);
  EXPECT_EQ(b.malformed(), 1u);
  b.release(bad);
}

TEST(medusa_card, forged_rx_ready_entries_are_rejected_and_counted) {
  card_pair p("forged", 4, 8);
  medusa_card& b = *p.b;
  const uint32_t bs = b.block_size();
  const uint32_t first_rx = b.tx_blocks();
  const uint32_t in_cell = medusa::entry_in_cell;
  ASSERT_EQ(b.inline_bytes(), 112u);
  struct forged {
    uint32_t block, length;
    bool real_block;
    bool malformed = true;  // else a void entry: refused, the drop the sender's to count
  };
  const forged cases[] = {
      {first_rx, bs + 1, true},           // longer than a block
      {first_rx + 1, 0xffffffffu, true},  // absurd length
      {first_rx + 2, 3, true},            // shorter than the wire header
      {first_rx + 3, 64, true},           // a block for a packet that fits its cell
      {first_rx + 8, 200, false},         // one past the last block
      // (an outbound block of the source names its packet delivered by
      // reference: test_medusa_by_reference.cc)
      {0xfffffffeu, 200, false},  // far out of range
      {0xfffffffeu, 0, false},
      {in_cell, 113, false},  // in its cell, longer than a cell holds
      {in_cell, bs, false},
      {in_cell, 0xffffffffu, false},
      {in_cell, 3, false},             // in its cell, shorter than the wire header
      {in_cell, 0, false, false},      // void
      {0xffffffffu, 0, false, false},  // void: the block field is all ones either way
  };
  uint64_t expect_malformed = 0;
  for (const auto& f : cases) {
    uint64_t taken = 0;
    if (f.real_block) {  // make the block really ours, as a receiver would hold it
      ASSERT_TRUE(b.rx_free_fifo().pop(taken));
      ASSERT_EQ(entry_block(taken), f.block);
    }
    ASSERT_TRUE(forge_rx_ready(b, encode_entry(f.block, f.length)));
    rx_packet r{};
    ASSERT_TRUE(b.receive(r));
    expect_malformed += f.malformed;
    EXPECT_FALSE(r.crc_ok);
    EXPECT_TRUE(r.rejected);
    EXPECT_EQ(r.length, 0u);
    ASSERT_NE(r.data, nullptr);
    EXPECT_EQ(b.malformed(), expect_malformed);
    EXPECT_EQ(b.crc_failures(), 0u);
    const uint64_t free_before = b.rx_free_fifo().size();
    b.release(r);
    EXPECT_EQ(b.rx_free_fifo().size(), free_before + (f.real_block ? 1 : 0));
    if (!f.real_block) {
      EXPECT_EQ(r.block, medusa_card::no_block);
    }
  }
  EXPECT_EQ(b.overflow_drops(), 0u);  // a forged void entry is no drop
  // The card still works, in its cells and its blocks.
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  for (uint32_t len : {72u, 500u}) {
    p.a->launch(1, t, build_exact(p.a->tx_block(t), len, len));
    rx_packet r{};
    ASSERT_TRUE(b.receive(r));
    EXPECT_TRUE(exact(r, len, len));
    b.release(r);
  }
  EXPECT_EQ(b.rx_free_fifo().size(), 8u);
}

TEST(medusa_card, forged_rx_free_entry_is_not_written_through) {
  card_pair p("forgedfree", 4, 2);
  medusa_card& b = *p.b;
  uint64_t e;
  while (b.rx_free_fifo().pop(e)) {
  }
  ASSERT_TRUE(b.rx_free_fifo().push(encode_entry(0, 1024)));           // b's tx block
  ASSERT_TRUE(b.rx_free_fifo().push(encode_entry(0x7fffffff, 1024)));  // beyond its VRAM
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  // Packets that need a block: each claims its cell, takes a forged block,
  // writes nothing and publishes the cell void.
  const std::vector<std::byte> before(b.tx_block(0), b.tx_block(0) + b.block_size());
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 500, 1));
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 500, 2));
  EXPECT_EQ(b.header().bad_rx_free.load(), 2u);
  EXPECT_EQ(p.a->malformed(), 2u);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), b.tx_block(0)));
  for (int i = 0; i < 2; ++i) {
    rx_packet r{};
    ASSERT_TRUE(b.receive(r));
    EXPECT_FALSE(r.crc_ok);
    EXPECT_TRUE(r.rejected);
    EXPECT_EQ(r.block, medusa_card::no_block);
    b.release(r);
  }
  EXPECT_EQ(b.malformed(), 0u);
  EXPECT_EQ(b.rx_free_fifo().size(), 0u);  // nothing given back for them
  // A packet in its cell needs no block: it still comes through.
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 72, 3));
  rx_packet r{};
  ASSERT_TRUE(b.receive(r));
  EXPECT_TRUE(exact(r, 72, 3));
  b.release(r);
  EXPECT_FALSE(b.receive(r));
}

TEST(medusa_card, bad_launch_arguments_are_rejected) {
  card_pair p("badlaunch", 2, 4);
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  build_packet(p.a->tx_block(t), 1, p.a->block_size());
  p.a->launch(1, 2, 100);                    // not a tx block
  p.a->launch(1, t, wire_header_size - 1);   // shorter than the header
  p.a->launch(1, t, p.a->block_size() + 1);  // longer than a block
  p.a->launch(2, t, 100);                    // no such process
  p.a->launch(-1, t, 100);
  EXPECT_EQ(p.a->malformed(), 5u);
  EXPECT_EQ(p.a->wire_stats().sent, 0u);
  rx_packet r{};
  EXPECT_FALSE(p.b->receive(r));
  // Not attached yet: a three-process card sending to process 2.
  medusa_card c(make_setup(unique_job("unattached"), 3, 0, 1, 1));
  ASSERT_TRUE(c.claim_tx_block(t));
  c.launch(2, t, build_packet(c.tx_block(t), 1, c.block_size()));
  EXPECT_EQ(c.malformed(), 1u);
  EXPECT_EQ(c.wire_stats().sent, 0u);
}

TEST(medusa_card, attach_timeout_names_the_peer) {
  card_setup s = make_setup(unique_job("timeout"), 2, 0, 1, 1);
  s.attach_timeout_ms = 30;
  medusa_card c(s);
  try {
    c.attach_peer(1);
    FAIL() << "attach to a missing card succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("process 1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(c.attached(1));
  EXPECT_THROW(c.attach_peer(5), std::invalid_argument);
}

TEST(medusa_card, incompatible_peer_is_refused) {
  const std::string job = unique_job("incompat");
  medusa_card a(make_setup(job, 2, 0, 1, 1, 1024));
  medusa_card b(make_setup(job, 2, 1, 1, 1, 2048));
  try {
    a.attach_peer(1);
    FAIL() << "attached a card with another block size";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("process 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("block size"), std::string::npos) << e.what();
  }
}

TEST(medusa_card, peer_with_another_rx_ready_cell_is_refused) {
  const std::string job = unique_job("incell");
  card_setup s0 = make_setup(job, 2, 0, 1, 1), s1 = make_setup(job, 2, 1, 1, 1);
  s1.rx_ready_cell = 256;
  medusa_card a(s0), b(s1);
  try {
    a.attach_peer(1);
    FAIL() << "attached a card with another RX_READY cell size";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("RX_READY cell"), std::string::npos) << e.what();
  }
}

TEST(medusa_card, segment_name_is_removed_on_destruction) {
  const std::string job = unique_job("unlink");
  card_setup sb = make_setup(job, 2, 1, 1, 1);
  sb.attach_timeout_ms = 30;
  medusa_card b(sb);
  { medusa_card a(make_setup(job, 2, 0, 1, 1)); }
  EXPECT_THROW(b.attach_peer(0), std::runtime_error);  // the name went with the card
  medusa_card again(make_setup(job, 2, 0, 1, 1));
  b.attach_peer(0);
  EXPECT_TRUE(b.attached(0));
}

// Kills and reaps a forked child if the test ends early.
struct child_guard {
  explicit child_guard(pid_t p) : pid(p) {}
  child_guard(child_guard&& o) noexcept : pid(o.pid) { o.pid = -1; }
  child_guard(const child_guard&) = delete;
  child_guard& operator=(const child_guard&) = delete;
  pid_t pid;
  ~child_guard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  // Waits (bounded by the child's own alarm) and returns its wait status.
  int wait() {
    int st = 0;
    if (waitpid(pid, &st, 0) == pid) pid = -1;
    return st;
  }
};

TEST(medusa_card, finalize_handshake_and_liveness) {
  const std::string job = unique_job("done");
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);
    close(go[1]);
    int rc = 0;
    try {
      medusa_card c(make_setup(job, 2, 1, 1, 1));
      char ch;
      (void)!read(go[0], &ch, 1);  // until the parent has looked at us
      c.announce_done();
    } catch (...) {
      rc = 1;
    }
    _exit(rc);
  }
  child_guard guard{child};
  close(go[0]);
  medusa_card a(make_setup(job, 2, 0, 1, 1));
  EXPECT_TRUE(a.peer_alive(0));
  EXPECT_FALSE(a.peer_alive(1));  // not attached yet
  a.attach_peer(1);
  EXPECT_TRUE(a.peer_alive(1));
  EXPECT_FALSE(a.peer_done(1));
  close(go[1]);
  const int st = guard.wait();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_TRUE(a.peer_done(1));    // the mapping outlives the peer
  EXPECT_FALSE(a.peer_alive(1));  // reaped: gone
  a.announce_done();
  EXPECT_TRUE(a.peer_done(0));
}

// Process 0 (parent) sends numbered packets with a bounded window; process 1
// (child) checks each and echoes it back; the parent checks the echoes.
int run_echo_child(const std::string& job, uint64_t count) {
  alarm(60);
  try {
    medusa_card c(make_setup(job, 2, 1, 4, 64, 2048));
    c.attach_peer(0);
    uint32_t t;
    if (!c.claim_tx_block(t)) return 2;
    const uint32_t bs = c.block_size();
    for (uint64_t n = 0; n < count;) {
      rx_packet r{};
      if (!c.receive(r)) continue;
      if (!r.crc_ok || check_packet(r, 0, 1, bs) != n) return 3;
      std::memcpy(c.tx_block(t) + wire_header_size, r.data + wire_header_size,
                  r.length - wire_header_size);
      const uint32_t len = r.length;
      c.release(r);
      c.launch(0, t, len);
      ++n;
    }
    if (c.overflow_drops() != 0 || c.malformed() != 0) return 4;
    // Stay until the parent has received everything (it unlinks its card first).
    rx_packet r{};
    while (!c.receive(r)) usleep(100);
    return 0;
  } catch (...) {
    return 5;
  }
}

TEST(medusa_card, two_process_exchange) {
  const std::string job = unique_job("fork");
  constexpr uint64_t count = 20000;
  constexpr uint64_t window = 32;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(run_echo_child(job, count));
  child_guard guard{child};
  bool ok = false;
  {
    medusa_card c(make_setup(job, 2, 0, window, 64, 2048));
    c.attach_peer(1);
    std::vector<uint32_t> blocks(window);
    for (auto& b : blocks) ASSERT_TRUE(c.claim_tx_block(b));
    const uint32_t bs = c.block_size();
    uint64_t sent = 0, got = 0;
    const uint64_t deadline = sys::clock::monotonic_ns() + 60'000'000'000ull;
    while (got < count && sys::clock::monotonic_ns() < deadline) {
      if (sent < count && sent - got < window) {
        const uint32_t b = blocks[sent % window];
        c.launch(1, b, build_packet(c.tx_block(b), sent, bs));
        ++sent;
      }
      rx_packet r{};
      if (c.receive(r)) {
        ASSERT_TRUE(r.crc_ok);
        ASSERT_EQ(check_packet(r, 1, 0, bs), got);
        c.release(r);
        ++got;
      }
    }
    EXPECT_EQ(got, count);
    EXPECT_EQ(c.overflow_drops(), 0u);
    // Tell the child to finish.
    c.launch(1, blocks[0], build_packet(c.tx_block(blocks[0]), count, bs));
    ok = got == count;
  }
  const int st = guard.wait();
  EXPECT_TRUE(WIFEXITED(st)) << "child killed by signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(ok);
}

// Two sender processes fill one receiver's card at once (RX_FREE and RX_READY
// with several producers): every packet is either delivered intact, in order
// per sender, or counted as an overflow drop at the receiver, the drops of
// packets that found a cell but no block showing there as void entries
// (24 blocks for 32 cells: most packets need a block).
int run_flood_sender(const std::string& job, int proc, uint64_t count, int start_fd) {
  alarm(60);
  try {
    medusa_card c(make_setup(job, 3, proc, 2, 2, 512));
    c.attach_peer(0);
    uint32_t t;
    if (!c.claim_tx_block(t)) return 2;
    char ch;
    (void)!read(start_fd, &ch, 1);  // both senders start together
    for (uint64_t seq = 0; seq < count; ++seq)
      c.launch(0, t, build_packet(c.tx_block(t), seq, c.block_size()));
    c.announce_done();
    while (c.peer_alive(0) && !c.peer_done(0)) usleep(200);  // keep my card until 0 is done
    return c.malformed() == 0 ? 0 : 3;
  } catch (...) {
    return 4;
  }
}

TEST(medusa_card, two_senders_one_receiver) {
  const std::string job = unique_job("flood");
  constexpr uint64_t count = 20000;
  medusa_card r(make_setup(job, 3, 0, 1, 24, 512));
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  std::vector<child_guard> kids;
  for (int proc = 1; proc <= 2; ++proc) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start[1]);
      _exit(run_flood_sender(job, proc, count, start[0]));
    }
    kids.emplace_back(pid);
  }
  close(start[0]);
  r.attach_peer(1);
  r.attach_peer(2);
  close(start[1]);
  uint64_t got[3] = {}, next[3] = {}, bad = 0, voids = 0;
  const uint64_t deadline = sys::clock::monotonic_ns() + 60'000'000'000ull;
  bool finished = false;
  while (!finished && sys::clock::monotonic_ns() < deadline) {
    // Both done (acquire) before the last drain: every push they made is visible.
    finished = r.peer_done(1) && r.peer_done(2);
    rx_packet p{};
    while (r.receive(p)) {
      if (!p.crc_ok && p.rejected && p.length == 0 && p.block == medusa_card::no_block) {
        ++voids;
        r.release(p);
        continue;
      }
      wire_header h;
      std::memcpy(&h, p.data, sizeof h);
      const uint64_t seq = p.crc_ok && (h.src == 1 || h.src == 2)
                               ? check_packet(p, h.src, 0, r.block_size())
                               : UINT64_MAX;
      if (seq == UINT64_MAX || seq < next[h.src]) {
        ++bad;
      } else {
        next[h.src] = seq + 1;
        ++got[h.src];
      }
      r.release(p);
    }
  }
  r.announce_done();
  for (auto& k : kids) {
    const int st = k.wait();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  EXPECT_TRUE(finished);
  EXPECT_EQ(bad, 0u);
  EXPECT_GE(got[1] + got[2], 24u);  // at least the blocks that were free at the start
  EXPECT_EQ(got[1] + got[2] + r.overflow_drops(), 2 * count);
  EXPECT_LE(voids, r.overflow_drops());
  EXPECT_EQ(r.malformed(), 0u);
  EXPECT_EQ(r.rx_free_fifo().size(), 24u);
}

// Every length around the RX_READY cell's inline room, for every cell size:
// a packet that fits travels in the cell and takes no block from RX_FREE,
// a longer one in a block taken from RX_FREE and given back at its
// release, byte for byte either way.
TEST(medusa_card, packets_inline_or_in_their_block_around_the_cell_boundary) {
  for (uint32_t cell : {16u, 64u, 128u, 256u}) {
    SCOPED_TRACE("rx_ready_cell " + std::to_string(cell));
    const std::string job = unique_job("inline");
    card_setup s0 = make_setup(job, 2, 0, 2, 8), s1 = make_setup(job, 2, 1, 2, 8);
    s0.rx_ready_cell = s1.rx_ready_cell = cell;
    medusa_card a(s0), b(s1);
    a.attach_peer(1);
    ASSERT_EQ(b.inline_bytes(), cell - 16);
    uint32_t t;
    ASSERT_TRUE(a.claim_tx_block(t));
    const uint32_t lengths[] = {
        payload_offset, 32,        47,        48,  49,  63, 64, 65, 111, 112, 113,
        cell - 17,      cell - 16, cell - 15, 500, 1024};
    for (uint32_t len : lengths) {
      if (len < payload_offset || len > a.block_size()) continue;
      SCOPED_TRACE("length " + std::to_string(len));
      a.launch(1, t, build_exact(a.tx_block(t), len, len * 7 + cell));
      rx_packet r{};
      ASSERT_TRUE(b.receive(r));
      EXPECT_TRUE(exact(r, len, len * 7 + cell));
      if (len <= b.inline_bytes()) {
        EXPECT_EQ(r.block, medusa_card::no_block) << "a packet that fits must come in the cell";
        EXPECT_EQ(b.rx_free_fifo().size(), 8u);
      } else {
        // Where the block lies in b's VRAM.
        EXPECT_EQ(r.data, b.tx_block(r.block)) << "a longer packet must come in its block";
        EXPECT_EQ(b.rx_free_fifo().size(), 7u);
      }
      b.release(r);
    }
    EXPECT_EQ(b.rx_free_fifo().size(), 8u);  // every block back
    EXPECT_EQ(b.overflow_drops(), 0u);
  }
}

// Packets released in another order than they came: each held packet's
// bytes stay as they arrived while later ones come and go (cells go back to
// the senders only in order, each block after its cell), and nothing is
// lost over many laps.
TEST(medusa_card, releases_out_of_order_never_let_a_held_packet_be_overwritten) {
  card_pair p("outoforder", 4, 4);  // 4 blocks, RX_READY of 4 cells
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  uint64_t tag = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<rx_packet> held;
    uint64_t in_blocks = 0;
    for (int i = 0; i < 4; ++i) {
      const uint32_t len = 24 + static_cast<uint32_t>((tag * 29) % 150);  // inline and not
      p.a->launch(1, t, build_exact(p.a->tx_block(t), len, tag));
      rx_packet r{};
      ASSERT_TRUE(p.b->receive(r));
      ASSERT_TRUE(exact(r, len, tag)) << "round " << round;
      in_blocks += r.block != medusa_card::no_block;
      held.push_back(r);
      ++tag;
    }
    // Release all but the oldest, in a rotating order; the senders get
    // nothing back (no block, no cell) until the oldest goes too.
    const int order[4][3] = {{3, 1, 2}, {2, 3, 1}, {1, 2, 3}, {3, 2, 1}};
    for (int k : order[round % 4]) p.b->release(held[k]);
    EXPECT_EQ(p.b->rx_free_fifo().size(), 4u - in_blocks);
    p.a->launch(1, t, build_exact(p.a->tx_block(t), 40, 999999));  // no cell: dropped
    EXPECT_EQ(p.b->overflow_drops(), static_cast<uint64_t>(round + 1));
    const uint64_t oldest_tag = tag - 4;
    ASSERT_TRUE(exact(held[0], held[0].length, oldest_tag)) << "the held packet was overwritten";
    p.b->release(held[0]);
    p.b->release(held[1]);  // twice: ignored
    EXPECT_EQ(p.b->rx_free_fifo().size(), 4u);
  }
  rx_packet r{};
  EXPECT_FALSE(p.b->receive(r));
}

// A release naming a position never popped (stale or made up) gives back
// nothing: no cell, no block.
TEST(medusa_card, release_of_a_position_never_popped_is_ignored) {
  card_pair p("stale", 4, 4);  // 4 blocks, RX_READY of 4 cells
  uint32_t t;
  ASSERT_TRUE(p.a->claim_tx_block(t));
  p.a->launch(1, t, build_exact(p.a->tx_block(t), 200, 5));  // in a block
  rx_packet r{};
  ASSERT_TRUE(p.b->receive(r));
  rx_packet forged = r;
  for (uint64_t pos : {r.position + 1, r.position + 100, ~uint64_t{0}}) {
    forged.position = pos;
    p.b->release(forged);
  }
  EXPECT_EQ(p.b->rx_free_fifo().size(), 3u);  // only r's block is out
  // And r's cell: three packets take the other cells, a fourth finds r's held.
  for (uint64_t tag = 6; tag < 10; ++tag) p.a->launch(1, t, build_exact(p.a->tx_block(t), 40, tag));
  EXPECT_EQ(p.b->overflow_drops(), 1u);
  EXPECT_TRUE(exact(r, 200, 5));
  p.b->release(r);
  EXPECT_EQ(p.b->rx_free_fifo().size(), 4u);
}

}  // namespace
}  // namespace hpam::nic
