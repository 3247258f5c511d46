// The HPAM card interface over Hamlyn: packets land in sender-managed
// regions of the receiver's slot and are found through its notification
// queue; blocks go back to their sender; seeded faults; and the D-way
// protocol itself running over the card, in one process and forked.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "../../common/test_util.hpp"
#include "am/endpoint_impl.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"

namespace hpam::test {
namespace {

using nic::hamlyn_am_card;

nic::card_setup am_setup(const std::string& job, int nprocs, int me, uint32_t rx, uint32_t tx) {
  nic::card_setup s;
  s.job = job;
  s.nprocs = nprocs;
  s.my_proc = me;
  s.block_size = 1024;
  s.rx_blocks = rx;
  s.tx_blocks = tx;
  s.attach_timeout_ms = 5000;
  return s;
}

// Card 0 sends to card 1; a third card, when asked for, only maps them.
struct am_pair {
  sys::manual_time time;
  sys::clock clk{&time};
  std::unique_ptr<hamlyn_am_card> c[3];
  am_pair(uint32_t rx, uint32_t tx, const nic::fault_config& f = {}, int nprocs = 2) {
    const std::string job = unique_job("hamcard");
    for (int p = 0; p < nprocs; ++p) {
      nic::card_setup s = am_setup(job, nprocs, p, rx, tx);
      s.faults = f;
      s.clock = &clk;
      c[p] = std::make_unique<hamlyn_am_card>(s);
    }
    for (int p = 0; p < nprocs; ++p)
      for (int q = 0; q < nprocs; ++q) c[p]->attach_peer(q);
  }
  // Writes a packet carrying `tag` in a claimed block of card 0 and launches it.
  void launch(uint32_t block, uint64_t tag, uint32_t len = 200) {
    std::byte* b = c[0]->tx_block(block);
    std::memset(b + nic::wire_header_size, static_cast<int>(tag & 0xFF),
                len - nic::wire_header_size);
    std::memcpy(b + nic::wire_header_size, &tag, sizeof tag);
    c[0]->launch(1, block, len);
  }
  // Card 1's inbound header as card 0 maps it (what a sender checks).
  nic::hamlyn::am_inbound_header inbound_of_1(uint64_t& at) const {
    nic::hamlyn::am_inbound_header in{};
    at = 0;
    EXPECT_EQ(nic::hamlyn::find_client(c[0]->hamlyn().view(1), nic::hamlyn::am_inbound_magic,
                                       nic::hamlyn::am_inbound_version, in, at),
              nic::hamlyn::client_lookup::found);
    return in;
  }
  std::vector<uint64_t> drain(bool release = true) {
    std::vector<uint64_t> tags;
    nic::rx_packet p;
    while (c[1]->receive(p)) {
      uint64_t tag;
      std::memcpy(&tag, p.data + nic::wire_header_size, sizeof tag);
      tags.push_back(p.crc_ok ? tag : ~0ull);
      if (release) c[1]->release(p);
    }
    return tags;
  }
};

TEST(hamlyn_am_card, packet_arrives_in_place_with_header_and_crc) {
  am_pair j(8, 4);
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  j.launch(b, 0x1122334455667788ull, 300);
  nic::rx_packet p;
  ASSERT_TRUE(j.c[1]->receive(p));
  EXPECT_TRUE(p.crc_ok);
  EXPECT_EQ(p.length, 300u);
  const auto* w = reinterpret_cast<const nic::wire_header*>(p.data);
  EXPECT_EQ(w->src, 0);
  EXPECT_EQ(w->dst, 1);
  EXPECT_EQ(w->length, 300u);
  EXPECT_LT(p.block, 2 * j.c[1]->blocks_per_sender());
  EXPECT_EQ(p.block / j.c[1]->blocks_per_sender(), 0u);  // sender 0's region
  uint64_t tag;
  std::memcpy(&tag, p.data + nic::wire_header_size, 8);
  EXPECT_EQ(tag, 0x1122334455667788ull);
  j.c[1]->release(p);
  EXPECT_FALSE(j.c[1]->receive(p));
  EXPECT_EQ(j.c[0]->wire_stats().sent, 1u);
}

TEST(hamlyn_am_card, released_blocks_go_back_to_their_sender) {
  am_pair j(4, 2);
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < 1000; ++i) {
    j.launch(b, i);
    if (i % 3 == 2) {
      auto t = j.drain();
      got.insert(got.end(), t.begin(), t.end());
    }
  }
  auto t = j.drain();
  got.insert(got.end(), t.begin(), t.end());
  ASSERT_EQ(got.size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(got[i], i);
  EXPECT_EQ(j.c[1]->overflow_drops(), 0u);
}

// A buggy receiver reads the packet in block 0 and releases it three
// times. It is given back once (the given-back count moves once; the two
// false releases are counted by the receiver): the next packets go to
// block 0 and, as the others come back, to the other blocks; none is
// written over before it is read. (Before blocks were counted, the sender
// once wrote packets 4, 5 and 6 all into block 0 and the receiver read
// packet 6 three times.)
TEST(hamlyn_am_card, a_block_given_back_twice_is_taken_back_once) {
  am_pair j(4, 8);
  const uint32_t per = j.c[1]->blocks_per_sender();
  ASSERT_EQ(per, 4u);
  std::vector<uint32_t> blocks(2 * per);
  for (auto& b : blocks) ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  for (uint64_t i = 0; i < per; ++i) j.launch(blocks[i], i);
  std::vector<uint64_t> got;
  nic::rx_packet p;
  ASSERT_TRUE(j.c[1]->receive(p));
  ASSERT_EQ(p.block, 0u);  // sender 0's block 0, in the receiver's numbering
  uint64_t tag;
  std::memcpy(&tag, p.data + nic::wire_header_size, sizeof tag);
  got.push_back(tag);
  for (int k = 0; k < 3; ++k) j.c[1]->release(p);
  for (uint64_t i = per; i < per + 3; ++i) j.launch(blocks[i], i);  // one lands, two wait
  for (int round = 0; round < 3; ++round) {
    for (uint64_t t : j.drain()) got.push_back(t);
    j.c[0]->service();  // the waiting packets go out as blocks come back
  }
  ASSERT_EQ(got.size(), per + 3u);
  for (uint64_t i = 0; i < per + 3; ++i) EXPECT_EQ(got[i], i);
  EXPECT_EQ(j.c[1]->malformed(), 2u);
  EXPECT_EQ(j.c[0]->malformed(), 0u);
  EXPECT_EQ(j.c[1]->overflow_drops(), 0u);
}

// A hostile receiver (or any process mapping its card) writes the
// given-back count its sender reads: beyond what the sender sent, or going
// back. The sender refuses both (counted) and writes no block it has not
// had back: with its region full it waits, and goes on once the count is
// one it can believe.
TEST(hamlyn_am_card, a_given_back_count_the_sender_cannot_believe_is_refused) {
  am_pair j(4, 12);
  const uint32_t per = j.c[1]->blocks_per_sender();
  std::vector<uint32_t> blocks(3 * per);
  for (auto& b : blocks) ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  for (uint64_t i = 0; i < per; ++i) j.launch(blocks[i], i);  // the region is full
  const nic::hamlyn::card_view& v = j.c[0]->hamlyn().view(1);
  uint64_t at = 0;
  const nic::hamlyn::am_inbound_header in = j.inbound_of_1(at);
  auto& count = reinterpret_cast<nic::hamlyn::am_given_back*>(v.area + in.given_back_offset)[0];
  count.count.store(per + 5);  // more than sent: every block "free"
  j.launch(blocks[per], per);  // waits: not believed
  EXPECT_EQ(j.c[0]->malformed(), 1u);
  count.count.store(0);
  std::vector<uint64_t> got = j.drain();  // the receiver's own releases: the count is honest again
  ASSERT_EQ(got.size(), per);
  j.c[0]->service();  // the waiting packet goes now
  for (uint64_t t : j.drain()) got.push_back(t);
  ASSERT_EQ(got.size(), per + 1u);
  for (uint64_t i = 0; i <= per; ++i) EXPECT_EQ(got[i], i);
  // Going back: the receiver has released per + 1, the sender last read
  // per (when it sent the waiting packet), so per - 1 more find a block and
  // the next two wait, each refusing the count.
  count.count.store(0);
  for (uint64_t i = per + 1; i <= 2 * per + 1; ++i) j.launch(blocks[i], i);
  EXPECT_EQ(j.c[0]->malformed(), 3u);
  got = j.drain();
  ASSERT_EQ(got.size(), per - 1u);
  for (uint64_t i = 0; i < per - 1; ++i) EXPECT_EQ(got[i], per + 1 + i);
}

TEST(hamlyn_am_card, full_region_backlogs_then_drops_and_recovers) {
  am_pair j(4, 12);
  std::vector<uint32_t> blocks(12);
  for (auto& b : blocks) ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  for (uint64_t i = 0; i < 9; ++i) j.launch(blocks[i], i);  // 4 land, 4 wait, 1 is dropped
  EXPECT_EQ(j.c[1]->overflow_drops(), 1u);
  auto first = j.drain();  // releases the 4 blocks
  EXPECT_EQ(first, (std::vector<uint64_t>{0, 1, 2, 3}));
  j.c[0]->service();  // the backlog goes out
  auto second = j.drain();
  EXPECT_EQ(second, (std::vector<uint64_t>{4, 5, 6, 7}));
  EXPECT_EQ(j.c[0]->wire_stats().sent, 9u);  // on the wire; the receiver counted the one dropped
}

TEST(hamlyn_am_card, forged_notification_is_counted_not_delivered) {
  am_pair j(4, 2);
  const auto& v = j.c[0]->hamlyn().view(1);
  nic::hamlyn::notification n{0, nic::hamlyn::fast_index, 0, 9999, 100};
  ASSERT_TRUE(nic::hamlyn::notification_append(*v.queue(0), v.ring(0), n));
  nic::rx_packet p;
  EXPECT_FALSE(j.c[1]->receive(p));
  EXPECT_EQ(j.c[1]->malformed(), 1u);
}

// An entry naming the receiver itself as its source, forged into any slot
// (a sender's region, mine, none), with a word and length that would pass,
// is refused and counted by the card: no slot maps to me, so the protocol
// does not test the source again (may_deliver_mine). Honest packets still
// arrive.
TEST(hamlyn_am_card, a_forged_entry_naming_me_is_counted_not_delivered) {
  static_assert(!hamlyn_am_card::may_deliver_mine);
  am_pair j(4, 2, {}, 3);
  const auto& v = j.c[0]->hamlyn().view(1);
  uint64_t refused = 0;
  for (uint32_t slot = 0; slot < 8; ++slot) {
    const nic::hamlyn::notification n{slot, nic::hamlyn::fast_index, 1, 0, 100};
    ASSERT_TRUE(nic::hamlyn::notification_append(*v.queue(0), v.ring(0), n));
    nic::rx_packet p;
    EXPECT_FALSE(j.c[1]->receive(p)) << slot;
    EXPECT_EQ(j.c[1]->malformed(), ++refused) << slot;
  }
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  j.launch(b, 42, 100);
  nic::rx_packet p;
  ASSERT_TRUE(j.c[1]->receive(p));
  EXPECT_TRUE(p.crc_ok);
  EXPECT_EQ(p.src, 0);
  j.c[1]->release(p);
  EXPECT_EQ(j.c[1]->malformed(), refused);
}

// The AM card's inbound FIFO carries nothing honest: every sender deposits
// itself (the regions lie in card memory). A packet pushed there anyway,
// well formed, on the sender's own region with its slot and key, is never
// served: the card takes its notification queue alone (before issue 26 its
// receive deposited and delivered it). Honest packets still arrive.
TEST(hamlyn_am_card, a_packet_pushed_into_the_inbound_fifo_is_never_served) {
  am_pair j(4, 2);
  const nic::hamlyn::card_view& v = j.c[0]->hamlyn().view(1);
  uint64_t at = 0;
  const nic::hamlyn::am_inbound_header in = j.inbound_of_1(at);
  nic::hamlyn::am_sender_entry mine;  // process 0's region at process 1
  std::memcpy(&mine, v.area + in.senders_offset, sizeof mine);
  std::byte packet[64]{};
  const nic::wire_header w{0, sizeof packet, 0, 1, 0};
  std::memcpy(packet, &w, sizeof w);
  nic::hamlyn::packet_header h{};
  h.destination = 1;
  h.slot = mine.slot;
  h.metadata_index = nic::hamlyn::fast_index;
  h.protection_key = mine.key;
  h.length = sizeof packet;
  h.flags =
      nic::hamlyn::encode_flags(nic::hamlyn::packet_kind::data, true) | nic::hamlyn::flag_single;
  const iovec piece{packet, sizeof packet};
  ASSERT_TRUE(j.c[0]->hamlyn().push_packet(1, h, &piece, 1));
  nic::rx_packet p;
  EXPECT_FALSE(j.c[1]->receive(p));
  EXPECT_FALSE(j.c[1]->arrival_pending());
  EXPECT_TRUE(j.c[1]->hamlyn().receiver().inbound_waiting());  // still there, unserved
  j.launch(0, 7);
  EXPECT_EQ(j.drain(), std::vector<uint64_t>{7});
  EXPECT_EQ(j.c[1]->malformed(), 0u);
}

// Any process that maps a card can write its notification queue. A third
// process rewrites the NQCB cursor and plants damaged and stale (earlier
// lap) wrap flags with garbage fields, before every packet of an honest
// sender: each packet is still delivered, once and in order, and what the
// reader passed over is counted. (Before the reader kept its own cursor,
// rewriting the shared head and tail deafened it at once.)
TEST(hamlyn_am_card, a_scribbled_notification_queue_neither_deafens_nor_replays) {
  am_pair j(8, 2, {}, 3);
  const nic::hamlyn::card_view& v = j.c[2]->hamlyn().view(1);  // the hostile mapping
  nic::hamlyn::notification_queue_control& q = *v.queue(0);
  const nic::hamlyn::notification_ring ring = v.ring(0);
  const uint64_t cap = v.geo.notify_capacity;
  std::mt19937_64 rng(12);
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  std::vector<uint64_t> got;
  uint64_t planted = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    q.cursor.store(q.cursor.load() + rng() % (4 * cap) - 2 * cap);  // behind, ahead, a lap off
    if (i % 3 == 0) q.cursor.store(rng());
    nic::hamlyn::notification_entry& e = ring.at(rng() % cap);
    const uint64_t f = e.wrap_flag.load();
    const uint64_t lap_before = nic::hamlyn::wrap_flag_cursor(f) - cap;
    if (nic::hamlyn::wrap_flag_state(f) == static_cast<uint64_t>(nic::hamlyn::entry_state::free)) {
      e.slot = static_cast<uint32_t>(rng());  // fields no sender wrote
      e.metadata = rng();
      e.wrap_flag.store(
          i % 2 ? ~0ull
                : nic::hamlyn::encode_wrap_flag(lap_before, nic::hamlyn::entry_state::written));
      ++planted;
    }
    j.launch(b, i);
    for (uint64_t t : j.drain()) got.push_back(t);
  }
  ASSERT_EQ(got.size(), 400u);
  for (uint64_t i = 0; i < 400; ++i) EXPECT_EQ(got[i], i);
  const nic::hamlyn::notification_reader& r = j.c[1]->hamlyn().receiver().reader(0);
  EXPECT_GT(planted, 100u);
  EXPECT_GT(r.damaged, 0u);            // the planted flags it came to
  EXPECT_GT(r.holes, 0u);              // entries writers skipped while the cursor pointed ahead
  EXPECT_EQ(j.c[1]->malformed(), 0u);  // no planted entry was ever taken as a notification
  EXPECT_EQ(q.overruns.load(), 0u);
}

// A third process holds the entry at the reader's cursor in the claimed
// state, as a writer would between its claim and its publish, and never
// publishes. The honest sender's packets go into the entries after it. The
// reader waits for the claimed entry only its patience (1 s), then takes it
// back and reads on: every packet is delivered, once and in order. (Before,
// the reader waited for that entry for ever: the card was deaf.)
TEST(hamlyn_am_card, an_entry_held_claimed_does_not_deafen_the_reader) {
  am_pair j(8, 2, {}, 3);
  const nic::hamlyn::card_view& v = j.c[2]->hamlyn().view(1);  // the hostile mapping
  const nic::hamlyn::notification_reader& r = j.c[1]->hamlyn().receiver().reader(0);
  nic::hamlyn::notification_entry& held = v.ring(0).at(r.cursor);
  uint64_t free_flag = nic::hamlyn::encode_wrap_flag(r.cursor, nic::hamlyn::entry_state::free);
  ASSERT_TRUE(held.wrap_flag.compare_exchange_strong(
      free_flag, nic::hamlyn::encode_wrap_flag(r.cursor, nic::hamlyn::entry_state::claimed)));
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  std::vector<uint64_t> got;
  uint64_t i = 0;
  for (; i < 3; ++i) {
    j.launch(b, i);
    for (uint64_t t : j.drain()) got.push_back(t);
  }
  EXPECT_TRUE(got.empty());  // held up behind the claimed entry, within its patience
  const uint64_t deadline = sys::clock::monotonic_ns() + 10'000'000'000ull;
  while (got.size() < 3 && sys::clock::monotonic_ns() < deadline) {
    for (uint64_t t : j.drain()) got.push_back(t);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (; i < 6; ++i) {
    j.launch(b, i);
    for (uint64_t t : j.drain()) got.push_back(t);
  }
  ASSERT_EQ(got.size(), 6u);
  for (uint64_t k = 0; k < 6; ++k) EXPECT_EQ(got[k], k);
  EXPECT_EQ(r.abandoned, 1u);
  EXPECT_EQ(j.c[1]->malformed(), 0u);
}

TEST(hamlyn_am_card, faults_drop_corrupt_duplicate) {
  nic::fault_config drop;
  drop.drop = 1.0;
  am_pair d(8, 2, drop);
  uint32_t b;
  ASSERT_TRUE(d.c[0]->claim_tx_block(b));
  d.launch(b, 1);
  EXPECT_TRUE(d.drain().empty());
  EXPECT_EQ(d.c[0]->wire_stats().dropped, 1u);

  nic::fault_config corrupt;
  corrupt.corrupt = 1.0;
  am_pair c(8, 2, corrupt);
  ASSERT_TRUE(c.c[0]->claim_tx_block(b));
  std::vector<uint64_t> bad;
  for (int i = 0; i < 20; ++i) {
    c.launch(b, 7);
    for (uint64_t t : c.drain()) bad.push_back(t);
  }
  ASSERT_EQ(bad.size(), 20u);
  for (uint64_t t : bad) EXPECT_EQ(t, ~0ull);  // every CRC failed
  EXPECT_EQ(c.c[0]->wire_stats().corrupted, 20u);

  nic::fault_config dup;
  dup.duplicate = 1.0;
  am_pair u(8, 2, dup);
  ASSERT_TRUE(u.c[0]->claim_tx_block(b));
  u.launch(b, 5);
  EXPECT_EQ(u.drain(), (std::vector<uint64_t>{5, 5}));
  EXPECT_EQ(u.c[0]->wire_stats().duplicated, 1u);
}

TEST(hamlyn_am_card, faults_delay_and_reorder) {
  nic::fault_config delay;
  delay.delay = 1.0;
  delay.delay_ns = 1000;
  am_pair d(8, 2, delay);
  uint32_t b;
  ASSERT_TRUE(d.c[0]->claim_tx_block(b));
  d.launch(b, 3);
  d.c[0]->service();
  EXPECT_TRUE(d.drain().empty());
  d.time.advance(1000);
  d.c[0]->service();
  EXPECT_EQ(d.drain(), (std::vector<uint64_t>{3}));
  EXPECT_EQ(d.c[0]->wire_stats().delayed, 1u);

  nic::fault_config reorder;
  reorder.reorder = 0.5;
  reorder.seed = 11;
  am_pair r(64, 40, reorder);
  std::vector<uint32_t> blocks(40);
  for (auto& x : blocks) ASSERT_TRUE(r.c[0]->claim_tx_block(x));
  for (uint64_t i = 0; i < 40; ++i) r.launch(blocks[i], i);
  for (uint64_t k = 0; k < 20; ++k)
    r.launch(blocks[k], 100 + k);  // the first one not held flushes the rest
  auto got = r.drain();
  EXPECT_GT(r.c[0]->wire_stats().reordered, 0u);
  std::vector<uint64_t> first40;
  for (uint64_t t : got)
    if (t < 40) first40.push_back(t);
  EXPECT_FALSE(std::is_sorted(first40.begin(), first40.end()));
  std::sort(first40.begin(), first40.end());
  first40.erase(std::unique(first40.begin(), first40.end()), first40.end());
  EXPECT_EQ(first40.size(), 40u);  // held back, never lost
}

// Two processes at the card level: the child echoes every packet back with
// its tag, releasing each block; no loss, no duplicate, every CRC good.
TEST(hamlyn_am_card, forked_echo_at_the_card_level) {
  const std::string job = unique_job("hamecho");
  const uint64_t n = 5000;
  const pid_t child = fork_child([&] {
    hamlyn_am_card c(am_setup(job, 2, 1, 8, 8));
    c.attach_peer(0);
    uint32_t b;
    if (!c.claim_tx_block(b)) return 2;
    uint64_t echoed = 0;
    nic::rx_packet p;
    while (echoed < n) {
      c.service();
      if (!c.receive(p)) continue;
      if (!p.crc_ok) return 3;
      std::memcpy(c.tx_block(b), p.data, p.length);
      const uint32_t len = p.length;
      c.release(p);
      c.launch(0, b, len);
      ++echoed;
    }
    // Keep serving (the last echoes may wait in the backlog for a block)
    // until the parent has them all.
    return spin_until(
               [&] {
                 c.service();
                 return c.peer_done(0);
               },
               30'000)
               ? 0
               : 4;
  });
  hamlyn_am_card c(am_setup(job, 2, 0, 8, 8));
  c.attach_peer(1);
  uint32_t b;
  ASSERT_TRUE(c.claim_tx_block(b));
  std::vector<int> seen(n, 0);
  uint64_t sent = 0, got = 0;
  nic::rx_packet p;
  ASSERT_TRUE(spin_until(
      [&] {
        c.service();
        if (sent < n && sent - got < 4) {  // at most 4 in flight: within the child's region
          std::memcpy(c.tx_block(b) + nic::wire_header_size, &sent, 8);
          c.launch(1, b, 64);
          ++sent;
        }
        while (c.receive(p)) {
          uint64_t tag;
          std::memcpy(&tag, p.data + nic::wire_header_size, 8);
          if (p.crc_ok && tag < n) seen[tag]++;
          c.release(p);
          ++got;
        }
        return got == n;
      },
      30'000));
  c.announce_done();
  EXPECT_EQ(reap(child), 0);
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << i;
  EXPECT_EQ(c.overflow_drops(), 0u);
}

// Each sender region is its own slot with its own key: a sender cannot
// deposit into another sender's region.
TEST(hamlyn_am_card, a_sender_cannot_write_another_senders_region) {
  const std::string job = unique_job("hamregion");
  std::unique_ptr<hamlyn_am_card> c[3];
  for (int p = 0; p < 3; ++p) c[p] = std::make_unique<hamlyn_am_card>(am_setup(job, 3, p, 8, 2));
  for (auto& x : c)
    for (int p = 0; p < 3; ++p) x->attach_peer(p);
  nic::hamlyn::card& h0 = c[0]->hamlyn();
  const auto& v = h0.view(2);
  nic::hamlyn::am_inbound_header ib;
  uint64_t at = 0;
  ASSERT_EQ(nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic,
                                     nic::hamlyn::am_inbound_version, ib, at),
            nic::hamlyn::client_lookup::found);
  const auto* senders =
      reinterpret_cast<const nic::hamlyn::am_sender_entry*>(v.area + ib.senders_offset);
  nic::hamlyn::ticket forged{};
  forged.node = 2;
  forged.slot = senders[1].slot;  // proc 1's region at proc 2 ...
  forged.metadata_index = nic::hamlyn::fast_index;
  forged.protection_key = senders[0].key;  // ... with proc 0's key
  forged.range = 1024;
  std::vector<std::byte> pkt(64);
  iovec piece{pkt.data(), pkt.size()};
  nic::hamlyn::message m;
  m.gather = &piece;
  m.gather_count = 1;
  nic::hamlyn::send_handle sh;
  ASSERT_EQ(h0.terminus().send(forged, m, sh), status::ok);
  EXPECT_EQ(h0.terminus().state(sh), nic::hamlyn::send_state::error);
  EXPECT_EQ(c[2]->hamlyn().arrivals().key_rejections, 1u);
  nic::rx_packet p;
  EXPECT_FALSE(c[2]->receive(p));
}

// Each packet is a fast-mode Hamlyn message on the block's ticket, made at
// attach: when the receiver revokes the sender's slot (or gives it a new
// key), the receiving interface refuses the packet and counts it, the
// sender counts it lost (malformed) and keeps the block, and nothing is
// notified.
TEST(hamlyn_am_card, a_revoked_or_rekeyed_region_refuses_and_counts) {
  am_pair j(4, 2);
  nic::hamlyn::card& h1 = j.c[1]->hamlyn();
  nic::hamlyn::am_inbound_header ib;
  uint64_t at = 0;
  ASSERT_EQ(nic::hamlyn::find_client(h1.view(1), nic::hamlyn::am_inbound_magic,
                                     nic::hamlyn::am_inbound_version, ib, at),
            nic::hamlyn::client_lookup::found);
  const uint32_t slot =
      reinterpret_cast<const nic::hamlyn::am_sender_entry*>(h1.view(1).area + ib.senders_offset)[0]
          .slot;
  uint32_t b;
  ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  j.launch(b, 1);
  EXPECT_EQ(j.drain(), std::vector<uint64_t>{1});
  ASSERT_EQ(h1.slots().revoke(slot), status::ok);
  for (uint64_t tag = 2; tag < 2 + 2 * j.c[1]->blocks_per_sender(); ++tag) j.launch(b, tag);
  EXPECT_EQ(h1.arrivals().revoked_rejections, 2 * j.c[1]->blocks_per_sender());
  EXPECT_EQ(j.c[0]->malformed(), 2 * j.c[1]->blocks_per_sender());
  EXPECT_TRUE(j.drain().empty());
  EXPECT_EQ(j.c[1]->overflow_drops(), 0u);  // refused, never waiting for a block
  ASSERT_EQ(h1.slots().rekey(slot, 0x5151), status::ok);
  j.launch(b, 9);
  EXPECT_EQ(h1.arrivals().key_rejections, 1u);
  EXPECT_EQ(j.c[0]->malformed(), 2 * j.c[1]->blocks_per_sender() + 1);
  EXPECT_TRUE(j.drain().empty());
  EXPECT_EQ(h1.arrivals().packets, 1u);
}

// The inbound area is typed and checked: a peer whose header disagrees with
// the layout this card computes for the same configuration is refused.
TEST(hamlyn_am_card, a_damaged_inbound_header_is_refused) {
  const std::string job = unique_job("hamhdr");
  hamlyn_am_card a(am_setup(job, 2, 0, 8, 2));
  hamlyn_am_card b(am_setup(job, 2, 1, 8, 2));
  a.hamlyn().attach_peer(1);
  const auto& v = a.hamlyn().view(1);
  nic::hamlyn::am_inbound_header ib;
  uint64_t at = 0;
  ASSERT_EQ(nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic,
                                     nic::hamlyn::am_inbound_version, ib, at),
            nic::hamlyn::client_lookup::found);
  EXPECT_EQ(ib.nprocs, 2u);
  EXPECT_EQ(ib.block_size, b.block_size());
  // Point the regions elsewhere, as a damaged or hostile peer might.
  auto* shared = reinterpret_cast<nic::hamlyn::am_inbound_header*>(v.area + at);
  shared->regions_offset += 64;
  EXPECT_THROW(a.attach_peer(1), std::runtime_error);
  shared->regions_offset -= 64;
  shared->prefix.version = 99;  // a layout this card does not know
  EXPECT_EQ(nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic,
                                     nic::hamlyn::am_inbound_version, ib, at),
            nic::hamlyn::client_lookup::damaged);
  EXPECT_THROW(a.attach_peer(1), std::runtime_error);
  shared->prefix.version = nic::hamlyn::am_inbound_version;
  // My region's slot there, one its card does not have: no route to it.
  auto* mine = reinterpret_cast<nic::hamlyn::am_sender_entry*>(v.area + ib.senders_offset);
  const uint32_t slot = mine->slot;
  mine->slot = v.geo.slot_count;
  EXPECT_THROW(a.attach_peer(1), std::runtime_error);
  mine->slot = slot;
  EXPECT_NO_THROW(a.attach_peer(1));
}

// --- headless packets (card_setup::headless_cells on a clean wire) ------

// Process 0's region at process 1 (the sender's view of it), as a ticket
// for block `b` (what the card makes at attach), for deposits by hand.
nic::hamlyn::ticket region_ticket_of(hamlyn_am_card& sender, uint32_t b) {
  const nic::hamlyn::card_view& v = sender.hamlyn().view(1);
  nic::hamlyn::am_inbound_header in{};
  uint64_t at = 0;
  EXPECT_EQ(nic::hamlyn::find_client(v, nic::hamlyn::am_inbound_magic,
                                     nic::hamlyn::am_inbound_version, in, at),
            nic::hamlyn::client_lookup::found);
  nic::hamlyn::am_sender_entry mine;
  std::memcpy(&mine, v.area + in.senders_offset, sizeof mine);
  nic::hamlyn::ticket t{};
  t.node = 1;
  t.slot = mine.slot;
  t.metadata_index = nic::hamlyn::fast_index;
  t.protection_key = mine.key;
  t.offset = uint64_t{b} * sender.block_size();
  t.range = sender.block_size();
  t.flags = nic::hamlyn::ticket_flags::notify;
  return t;
}

// Cards 0 and 1 of one job, each asked for headless packets or not.
struct headless_pair {
  std::unique_ptr<hamlyn_am_card> c[2];
  uint32_t block = 0;
  headless_pair(bool sender_asks, bool receiver_asks, bool crc = false,
                const nic::fault_config& f = {}, int crc_at = -1) {
    const std::string job = unique_job("hamheadless");
    for (int p = 0; p < 2; ++p) {
      nic::card_setup s = am_setup(job, 2, p, 8, 4);
      s.headless_cells = p == 0 ? sender_asks : receiver_asks;
      s.crc = crc || p == crc_at;
      s.faults = f;
      c[p] = std::make_unique<hamlyn_am_card>(s);
    }
    for (auto& x : c)
      for (int q = 0; q < 2; ++q) x->attach_peer(q);
    EXPECT_TRUE(c[0]->claim_tx_block(block));
  }
  // Launches `len` bytes (byte i of the payload: i * 7) from a block whose
  // wire header holds 0xAB everywhere; true when that header was left so.
  bool launch(uint32_t len, bool again = false) {
    std::byte* b = c[0]->tx_block(block);
    std::memset(b, 0xAB, nic::wire_header_size);
    for (uint32_t i = nic::wire_header_size; i < len; ++i) b[i] = static_cast<std::byte>(i * 7);
    if (again)
      c[0]->relaunch(1, block, len);
    else
      c[0]->launch(1, block, len);
    for (uint32_t i = 0; i < nic::wire_header_size; ++i)
      if (b[i] != std::byte{0xAB}) return false;
    return true;
  }
  static bool payload_exact(const nic::rx_packet& r, uint32_t len) {
    for (uint32_t i = nic::wire_header_size; i < len; ++i)
      if (r.data[i] != static_cast<std::byte>(i * 7)) return false;
    return true;
  }
  nic::hamlyn::ticket region_ticket(uint32_t b) const { return region_ticket_of(*c[0], b); }
};

// A headless packet's wire header is neither written (the 0xAB bytes stay)
// nor read: the receiver finds the packet's length and source in its
// notification, its bytes from wire_header_size on where they were sent.
// 72 to 480 bytes travel in the entry (notify_inline, by default 480: a
// 512-byte entry), 481 and 700 in the block; a copy sent again (relaunch)
// goes the same way.
TEST(hamlyn_am_card, a_headless_packet_is_addressed_by_its_notification) {
  headless_pair j(true, true);
  const nic::hamlyn::notification_ring ring = j.c[1]->hamlyn().receiver().port(0).ring;
  ASSERT_EQ(ring.entry_bytes, 512u);
  for (const uint32_t len : {64u, 72u, 96u, 112u, 300u, 480u, 481u, 700u}) {
    for (const bool again : {false, true}) {
      const uint64_t cursor = j.c[1]->hamlyn().receiver().reader(0).cursor;
      EXPECT_TRUE(j.launch(len, again)) << len << " " << again;
      nic::rx_packet r{};
      ASSERT_TRUE(j.c[1]->receive(r)) << len;
      EXPECT_TRUE(r.crc_ok);
      EXPECT_FALSE(r.rejected);
      EXPECT_EQ(r.length, len);
      EXPECT_EQ(r.src, 0);
      EXPECT_TRUE(headless_pair::payload_exact(r, len)) << len;
      // Carried (up to the room, 480): in a compact entry where that saves
      // a line (112, 300 bytes), the packet from the entry's first byte,
      // its unread wire header the entry's own; else (72, 96, 480 bytes:
      // the full form ends in the same line) after the entry's fields.
      if (len <= ring.room())
        EXPECT_EQ(r.data, nic::hamlyn::compact_saves_a_line(len)
                              ? reinterpret_cast<const std::byte*>(&ring.at(cursor))
                              : nic::hamlyn::entry_message(ring.at(cursor)))
            << len;
      else
        EXPECT_FALSE(r.data >= reinterpret_cast<const std::byte*>(&ring.at(0)) &&
                     r.data < reinterpret_cast<const std::byte*>(&ring.at(0)) +
                                  size_t{ring.cap} * ring.entry_bytes)
            << len;
      j.c[1]->release(r);
    }
  }
  EXPECT_EQ(j.c[1]->hamlyn().arrivals().packets, 16u);
  EXPECT_EQ(j.c[1]->malformed(), 0u);
  EXPECT_EQ(j.c[0]->malformed(), 0u);
}

// Not asked, a CRC, or a wire that may hold a packet back: every packet has
// its wire header written, delivered and checked.
TEST(hamlyn_am_card, not_asked_a_crc_or_a_faulty_wire_keeps_the_wire_header) {
  nic::fault_config reorder;
  reorder.reorder = 1e-9;  // a wire that may hold a packet back, which it never does here
  struct variant {
    bool asked, crc;
    nic::fault_config faults;
  };
  for (const variant& v :
       {variant{false, false, {}}, variant{true, true, {}}, variant{true, false, reorder}}) {
    headless_pair j(v.asked, v.asked, v.crc, v.faults);
    EXPECT_FALSE(j.launch(72)) << v.asked << v.crc;  // written
    nic::rx_packet r{};
    ASSERT_TRUE(j.c[1]->receive(r));
    EXPECT_TRUE(r.crc_ok);
    nic::wire_header w;
    std::memcpy(&w, r.data, sizeof w);
    EXPECT_EQ(w.length, 72u);
    EXPECT_EQ(w.src, 0);
    EXPECT_EQ(w.dst, 1);
    EXPECT_TRUE(headless_pair::payload_exact(r, 72));
    j.c[1]->release(r);
    EXPECT_EQ(j.c[1]->malformed(), 0u);
  }
}

// A receiver that checks CRCs refuses a headless packet and counts it: it
// has no wire header, so no CRC. One that does not takes it, asked for
// headless packets itself or not (as Medusa's headless cells). A headless
// receiver still takes a full packet and checks its header.
TEST(hamlyn_am_card, a_headless_packet_is_refused_where_headless_packets_are_not_taken) {
  {
    headless_pair j(true, true, false, {}, 1);  // the receiver checks CRCs
    EXPECT_TRUE(j.launch(72));
    nic::rx_packet r{};
    EXPECT_FALSE(j.c[1]->receive(r));
    EXPECT_EQ(j.c[1]->malformed(), 1u);
  }
  {
    headless_pair j(true, false);  // not asked itself
    EXPECT_TRUE(j.launch(72));
    nic::rx_packet r{};
    ASSERT_TRUE(j.c[1]->receive(r));
    EXPECT_TRUE(r.crc_ok);
    EXPECT_EQ(r.length, 72u);
    EXPECT_TRUE(headless_pair::payload_exact(r, 72));
    j.c[1]->release(r);
    EXPECT_EQ(j.c[1]->malformed(), 0u);
  }
  {
    headless_pair j(false, true);
    EXPECT_FALSE(j.launch(72));
    nic::rx_packet r{};
    ASSERT_TRUE(j.c[1]->receive(r));
    EXPECT_TRUE(r.crc_ok);
    EXPECT_TRUE(headless_pair::payload_exact(r, 72));
    j.c[1]->release(r);
    // The same, its header lying about the length: refused and counted.
    std::byte* b = j.c[0]->tx_block(j.block);
    const uint32_t lie = 80;
    std::memcpy(b + offsetof(nic::wire_header, length), &lie, sizeof lie);
    nic::hamlyn::message m;
    iovec piece{b, 72};
    m.gather = &piece;
    m.gather_count = 1;
    m.fast_word = 1;
    nic::hamlyn::send_handle h;
    ASSERT_EQ(j.c[0]->hamlyn().terminus().send(j.region_ticket(1), m, h), status::ok);
    ASSERT_TRUE(j.c[1]->receive(r));
    EXPECT_FALSE(r.crc_ok);
    EXPECT_TRUE(r.rejected);
    EXPECT_EQ(j.c[1]->malformed(), 1u);
  }
}

// Words a sender may write by hand into its own region: a headless packet
// is taken under the card's address whatever its header's bytes say (here
// another source and 999 bytes: not read), and a word with any other bit
// beyond the block's is refused and counted.
TEST(hamlyn_am_card, a_headless_word_is_checked_and_gives_no_say_over_the_address) {
  headless_pair j(true, true);
  std::vector<std::byte> msg(72);
  nic::wire_header lie{0, 999, 1, 0, 0};  // a header claiming source 1 and 999 bytes
  std::memcpy(msg.data(), &lie, sizeof lie);
  const uint64_t bad[] = {nic::hamlyn::headless_word | (uint64_t{1} << 40),
                          uint64_t{8} << nic::hamlyn::headless_shift,
                          uint64_t{3} << nic::hamlyn::headless_shift};
  uint64_t refused = 0;
  for (const uint64_t word : {nic::hamlyn::headless_word | 2, bad[0], bad[1], bad[2]}) {
    nic::hamlyn::message m;
    iovec piece{msg.data(), msg.size()};
    m.gather = &piece;
    m.gather_count = 1;
    m.fast_word = word;
    nic::hamlyn::send_handle h;
    ASSERT_EQ(j.c[0]->hamlyn().terminus().send(j.region_ticket(2), m, h), status::ok);
    nic::rx_packet r{};
    if (word == (nic::hamlyn::headless_word | 2)) {
      ASSERT_TRUE(j.c[1]->receive(r));
      EXPECT_TRUE(r.crc_ok);
      EXPECT_EQ(r.src, 0);
      EXPECT_EQ(r.length, 72u);
      EXPECT_EQ(r.block, 2u);
      // (The header's 16 bytes are not read: carried compact they would be
      // the entry's.)
      EXPECT_EQ(std::memcmp(r.data + nic::wire_header_size, msg.data() + nic::wire_header_size,
                            msg.size() - nic::wire_header_size),
                0);
      j.c[1]->release(r);
    } else {
      EXPECT_FALSE(j.c[1]->receive(r)) << std::hex << word;
      EXPECT_EQ(j.c[1]->malformed(), ++refused) << std::hex << word;
    }
  }
}

// --- delivered by reference (card_setup::deliver_by_reference) -----------

// Cards 0 and 1 of one job (1 KiB blocks, 4 outbound blocks, a region of
// 8), packets longer than 256 bytes asked to go by reference.
struct byref_pair {
  std::unique_ptr<hamlyn_am_card> c[2];
  uint32_t block = 0;
  struct options {
    bool asked = true;
    bool crc = false;
    nic::fault_config faults{};
    int crc_at = -1;                // this card alone checks CRCs
    bool receiver_attaches = true;  // card 1 maps card 0's card before any packet
    bool headless = false;
    uint32_t receiver_inline = nic::hamlyn::notification_inline_bytes;
  };
  explicit byref_pair(const options& o) {
    const std::string job = unique_job("hambyref");
    for (int p = 0; p < 2; ++p) {
      nic::card_setup s = am_setup(job, 2, p, 8, 4);
      s.deliver_by_reference = o.asked;
      s.by_reference_above = 256;
      s.headless_cells = o.headless;
      s.crc = o.crc || p == o.crc_at;
      s.faults = o.faults;
      if (p == 1) s.notify_inline = o.receiver_inline;
      c[p] = std::make_unique<hamlyn_am_card>(s);
    }
    c[0]->attach_peer(0);
    c[0]->attach_peer(1);
    c[1]->attach_peer(1);
    if (o.receiver_attaches) c[1]->attach_peer(0);
    EXPECT_TRUE(c[0]->claim_tx_block(block));
  }
  // Writes `len` bytes (byte i of the payload: i * 7) in the block and
  // launches them (or, again, relaunches).
  void launch(uint32_t len, bool again = false) {
    std::byte* b = c[0]->tx_block(block);
    for (uint32_t i = nic::wire_header_size; i < len; ++i) b[i] = static_cast<std::byte>(i * 7);
    if (again)
      c[0]->relaunch(1, block, len);
    else
      c[0]->launch(1, block, len);
  }
  static bool payload_exact(const nic::rx_packet& r, uint32_t len) {
    for (uint32_t i = nic::wire_header_size; i < len; ++i)
      if (r.data[i] != static_cast<std::byte>(i * 7)) return false;
    return true;
  }
  // A message of `n` bytes deposited by hand into region block `rb` with
  // fast-mode word `word`: past the key check, as process 0 could.
  void forge(uint32_t rb, uint64_t word, const void* msg, size_t n) {
    nic::hamlyn::message m;
    iovec piece{const_cast<void*>(msg), n};
    m.gather = &piece;
    m.gather_count = 1;
    m.fast_word = word;
    nic::hamlyn::send_handle h;
    ASSERT_EQ(c[0]->hamlyn().terminus().send(region_ticket_of(*c[0], rb), m, h), status::ok);
  }
};

// A packet longer than by_reference_above is read in the sender's outbound
// block (the receiver, which never attached the sender, maps its card at
// the first reference): a byte the sender writes there afterwards is seen
// through the packet. Shorter packets and copies sent again (relaunch) are
// copied into the region as before; the region's blocks are lent and given
// back as for any packet, round after round.
TEST(hamlyn_am_card, a_long_packet_is_read_in_its_senders_outbound_block) {
  for (const bool headless : {false, true}) {
    byref_pair::options o;
    o.receiver_attaches = false;
    o.headless = headless;
    byref_pair j(o);
    uint64_t by_reference = 0;
    for (int round = 0; round < 20; ++round) {
      for (const uint32_t len : {257u, 600u, 1024u, 256u, 100u}) {
        for (const bool again : {false, true}) {
          j.launch(len, again);
          if (len > 256 && !again) ++by_reference;
          EXPECT_EQ(j.c[0]->by_reference_sends(), by_reference) << len << " " << again;
          nic::rx_packet r{};
          ASSERT_TRUE(j.c[1]->receive(r)) << len << " " << again;
          EXPECT_TRUE(r.crc_ok);
          EXPECT_FALSE(r.rejected);
          EXPECT_EQ(r.length, len);
          EXPECT_EQ(r.src, 0);
          EXPECT_TRUE(byref_pair::payload_exact(r, len)) << len << " " << again;
          // Written after the send: seen through the packet only by reference.
          std::byte* mark = j.c[0]->tx_block(j.block) + len - 1;
          const std::byte before = *mark;
          *mark = ~before;
          EXPECT_EQ(r.data[len - 1] != before, len > 256 && !again) << len << " " << again;
          *mark = before;
          j.c[1]->release(r);
        }
      }
    }
    EXPECT_EQ(by_reference, 20u * 3);
    EXPECT_EQ(j.c[1]->malformed(), 0u);
    EXPECT_EQ(j.c[0]->malformed(), 0u);
    EXPECT_EQ(j.c[0]->overflow_drops(), 0u);
  }
}

// Not asked, a CRC (at either end), a wire that may hold a packet back, or
// a receiver whose entry does not carry the reference: every packet is
// copied into its block, and arrives whole.
TEST(hamlyn_am_card, by_reference_only_where_asked_on_a_clean_wire_into_an_entry) {
  nic::fault_config reorder;
  reorder.reorder = 1e-9;  // a wire that may hold a packet back, which it never does here
  std::vector<byref_pair::options> variants(5);
  variants[0].asked = false;
  variants[1].crc = true;
  variants[2].faults = reorder;
  variants[3].receiver_inline = 0;
  variants[4].crc_at = 0;
  for (size_t v = 0; v < variants.size(); ++v) {
    byref_pair j(variants[v]);
    j.launch(600);
    EXPECT_EQ(j.c[0]->by_reference_sends(), 0u) << v;
    nic::rx_packet r{};
    ASSERT_TRUE(j.c[1]->receive(r)) << v;
    EXPECT_TRUE(r.crc_ok) << v;
    EXPECT_EQ(r.length, 600u);
    EXPECT_TRUE(byref_pair::payload_exact(r, 600)) << v;
    j.c[1]->release(r);
    EXPECT_EQ(j.c[1]->malformed(), 0u) << v;
  }
}

// References forged by hand into the sender's own region, with its slot
// and key (past the key check): an honest one is taken; one naming a block
// beyond the sender's published outbound blocks, a length outside
// [wire header, block], a message of another size than an am_reference, a
// region block beyond the region or another bit in the word is refused and
// counted; a wire header that disagrees with the reference is rejected and
// counted; a headless reference is taken under its own length.
TEST(hamlyn_am_card, forged_references_are_refused_and_counted) {
  byref_pair j({});
  j.launch(600);  // an honest packet by reference: the block's wire header says 600 bytes
  nic::rx_packet r{};
  ASSERT_TRUE(j.c[1]->receive(r));
  j.c[1]->release(r);
  ASSERT_EQ(j.c[0]->by_reference_sends(), 1u);
  const uint64_t ref = nic::hamlyn::reference_word;
  struct forgery {
    uint32_t region_block;  // deposited into
    uint64_t word;          // its fast-mode word
    nic::hamlyn::am_reference reference;
    size_t size;  // of the message
    int outcome;  // 0 refused, 1 taken, 2 taken and rejected
  };
  const uint32_t b = j.block;
  const forgery forged[] = {
      {1, 1 | ref, {b, 600}, 8, 1},
      {2, 2 | ref, {4, 600}, 8, 0},  // the sender has 4 outbound blocks
      {2, 2 | ref, {~0u, 600}, 8, 0},
      {2, 2 | ref, {b, 15}, 8, 0},  // shorter than a wire header
      {2, 2 | ref, {b, 0}, 8, 0},
      {2, 2 | ref, {b, 1025}, 8, 0},  // longer than a block
      {2, 2 | ref, {b, ~0u}, 8, 0},
      {2, 2 | ref, {b, 600}, 16, 0},  // not exactly an am_reference
      {2, 2 | ref, {b, 600}, 7, 0},
      {2, 8 | ref, {b, 600}, 8, 0},  // the word's block beyond the region's 8 blocks
      {2, 2 | ref | (uint64_t{1} << 40), {b, 600}, 8, 0},
      {2, 2 | ref | (uint64_t{1} << 34), {b, 600}, 8, 0},
      {2, 2 | ref, {b, 500}, 8, 2},                               // its wire header says 600
      {3, 3 | ref | nic::hamlyn::headless_word, {b, 500}, 8, 1},  // headless: not read
  };
  uint64_t refused = 0;
  for (const forgery& f : forged) {
    uint8_t msg[16] = {};
    std::memcpy(msg, &f.reference, sizeof f.reference);
    j.forge(f.region_block, f.word, msg, f.size);
    nic::rx_packet p{};
    const bool taken = j.c[1]->receive(p);
    EXPECT_EQ(taken, f.outcome != 0) << f.reference.block << " " << f.reference.length;
    if (f.outcome != 1) ++refused;
    EXPECT_EQ(j.c[1]->malformed(), refused) << f.reference.block << " " << f.reference.length;
    if (!taken) continue;
    EXPECT_EQ(p.rejected, f.outcome == 2);
    EXPECT_EQ(p.crc_ok, f.outcome == 1);
    EXPECT_EQ(p.length, f.reference.length);
    EXPECT_EQ(p.src, 0);
    EXPECT_EQ(p.block, f.region_block);
    if (f.outcome == 1) {
      EXPECT_TRUE(byref_pair::payload_exact(p, p.length));
    }
    j.c[1]->release(p);
  }
  // A receiver whose entries carry nothing, and one that checks CRCs, take
  // no reference at all.
  byref_pair::options no_room;
  no_room.receiver_inline = 0;
  byref_pair::options checks;
  checks.crc_at = 1;
  for (const byref_pair::options& o : {no_room, checks}) {
    byref_pair k(o);
    k.launch(600);
    ASSERT_TRUE(k.c[1]->receive(r));
    k.c[1]->release(r);
    const nic::hamlyn::am_reference honest{k.block, 600};
    k.forge(1, 1 | ref, &honest, sizeof honest);
    EXPECT_FALSE(k.c[1]->receive(r));
    EXPECT_EQ(k.c[1]->malformed(), 1u);
  }
}

// --- the protocol over the card ------------------------------------------

using ep = am::endpoint<hamlyn_am_card>;
enum : unsigned { h_add = 1, h_result = 2 };
struct seen {
  uint64_t counter = 0;
  std::vector<uint64_t> results;
};
void on_add(hpam_token* t, void* ctx, uint64_t a, uint64_t, uint64_t, uint64_t) {
  auto* s = static_cast<seen*>(ctx);
  const uint64_t w[4] = {s->counter, 0, 0, 0};
  s->counter += a;
  (void)static_cast<ep*>(t->endpoint)->reply_4(*t, h_result, w);
}
void on_result(hpam_token*, void* ctx, uint64_t a, uint64_t, uint64_t, uint64_t) {
  static_cast<seen*>(ctx)->results.push_back(a);
}

am::endpoint_config ep_config(const std::string& job, int me, const nic::fault_config& f,
                              sys::manual_time* t) {
  am::endpoint_config c;
  c.card.job = job;
  c.card.nprocs = 2;
  c.card.my_proc = me;
  c.card.faults = f;
  c.card.faults.seed = f.seed + 31u * static_cast<unsigned>(me);
  c.card.attach_timeout_ms = 5000;
  c.timeout_ns = 1'000'000;
  c.manual_time = t;
  return c;
}

TEST(hamlyn_am_protocol, exactly_once_over_a_faulty_hamlyn_wire) {
  nic::fault_config f;
  f.drop = f.duplicate = f.corrupt = f.reorder = f.delay = 0.05;
  f.delay_ns = 500'000;
  f.seed = 99;
  sys::manual_time t;
  const std::string job = unique_job("hamproto");
  ep a(ep_config(job, 0, f, &t)), b(ep_config(job, 1, f, &t));
  a.connect_all();
  b.connect_all();
  seen sa, sb;
  for (auto* e : {&a, &b}) {
    seen* s = e == &a ? &sa : &sb;
    ASSERT_EQ(e->register_handler4(h_add, on_add, s), status::ok);
    ASSERT_EQ(e->register_handler4(h_result, on_result, s), status::ok);
  }
  const int n = 300;
  const uint64_t w[4] = {1, 0, 0, 0};
  for (int i = 0; i < n; ++i)
    while (a.request_4(1, h_add, w, false) == status::busy) {
      t.advance(100'000);
      (void)a.poll();
      (void)b.poll();
    }
  for (int r = 0; r < 200000 && a.request_outstanding(1); ++r) {
    t.advance(100'000);
    (void)a.poll();
    (void)b.poll();
  }
  EXPECT_EQ(sb.counter, static_cast<uint64_t>(n));
  auto res = sa.results;
  std::sort(res.begin(), res.end());
  ASSERT_EQ(res.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(res[i], static_cast<uint64_t>(i));
  EXPECT_GT(a.totals().retransmissions, 0u);
}

TEST(hamlyn_am_protocol, forked_peers_exchange_requests) {
  const std::string job = unique_job("hamfork");
  const int n = 2000;
  const pid_t child = fork_child([&] {
    ep e(ep_config(job, 1, {}, nullptr));
    e.connect_all();
    seen s;
    (void)e.register_handler4(h_add, on_add, &s);
    (void)e.register_handler4(h_result, on_result, &s);
    if (!spin_until(
            [&] {
              (void)e.poll();
              return s.counter == static_cast<uint64_t>(n);
            },
            30'000))
      return 2;
    return is_ok(e.drain()) ? 0 : 3;
  });
  ep e(ep_config(job, 0, {}, nullptr));
  e.connect_all();
  seen s;
  ASSERT_EQ(e.register_handler4(h_add, on_add, &s), status::ok);
  ASSERT_EQ(e.register_handler4(h_result, on_result, &s), status::ok);
  const uint64_t w[4] = {1, 0, 0, 0};
  for (int i = 0; i < n; ++i) ASSERT_EQ(e.request_4(1, h_add, w, true), status::ok);
  EXPECT_EQ(e.drain(), status::ok);
  EXPECT_EQ(reap(child), 0);
  std::sort(s.results.begin(), s.results.end());
  ASSERT_EQ(s.results.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(s.results[i], static_cast<uint64_t>(i));
}

}  // namespace
}  // namespace hpam::test
