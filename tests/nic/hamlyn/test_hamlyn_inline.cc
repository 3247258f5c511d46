// Inline delivery (an extension of the Hamlyn fast mode, OSDI'96 2.7): a
// slot that asks for it (slot_spec::inline_limit) has its short fast-mode
// messages carried in the notification entry itself instead of being
// deposited at base + offset. The receiving interface (every path a
// fast-mode message can take, the boundary, slots that did not ask,
// refusals) and the AM card's regions (byte-exact packets on either side of
// notify_inline, faults, a forged carried entry). The queue itself:
// test_hamlyn_queue.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "hamlyn_fixture.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

uint32_t inline_slot(card& c, const guarded_area& a, uint32_t limit,
                     slot_mode mode = slot_mode::fast, area_memory memory = area_memory::card,
                     uint64_t base = 0) {
  slot_spec s;
  s.memory = memory;
  s.base = memory == area_memory::card ? a.offset : base;
  s.bound = a.bytes;
  s.mode = mode;
  s.metadata_count = mode == slot_mode::fast ? 0 : 2;
  s.inline_limit = limit;
  uint32_t index = ~0u;
  EXPECT_EQ(c.slots().create_slot(s, index), status::ok);
  return index;
}

// The room is the card's entries' (card_config::notify_entry_bytes less
// the 32-byte header): 96, 224 or 480 bytes; a card of other entry sizes
// is refused at setup.
TEST(hamlyn_inline, setup_refuses_a_limit_over_the_entry_room) {
  for (uint32_t entry_bytes : {128u, 256u, 512u}) {
    hamlyn_job j(2, [entry_bytes](card_config& c) { c.notify_entry_bytes = entry_bytes; });
    const uint32_t room = notification_room(entry_bytes);
    EXPECT_EQ(j[1].view(1).geo.notify_entry_bytes, entry_bytes);
    guarded_area a(j[1], 256);
    slot_spec s;
    s.base = a.offset;
    s.bound = a.bytes;
    s.mode = slot_mode::fast;
    s.inline_limit = room + 1;
    uint32_t index;
    EXPECT_EQ(j[1].slots().create_slot(s, index), status::invalid_argument) << entry_bytes;
    s.inline_limit = room;
    EXPECT_EQ(j[1].slots().create_slot(s, index), status::ok) << entry_bytes;
    EXPECT_EQ(j[1].slots().slot_at(index).inline_limit, room);
  }
  for (uint32_t entry_bytes : {0u, 64u, 192u, 1024u})
    EXPECT_THROW(
        hamlyn_job(2, [entry_bytes](card_config& c) { c.notify_entry_bytes = entry_bytes; }),
        std::invalid_argument)
        << entry_bytes;
}

// send_fast into a slot with inline_limit L: messages of up to L bytes come
// in the entry (the message area is not written), longer ones at base +
// offset as before; every one byte-exact, counted and notified with its word.
TEST(hamlyn_inline, fast_messages_up_to_the_limit_travel_in_the_entry) {
  for (uint32_t limit : {40u, notification_inline_bytes}) {
    hamlyn_job j(2, [](card_config& c) { c.packet_size = 256; });
    guarded_area a(j[1], 1024);
    const uint32_t s = inline_slot(j[1], a, limit);
    const ticket t = j[1].slots().make_ticket(s, fast_index, 0, 1024, true);
    uint64_t messages = 0;
    for (uint32_t len : {0u, 1u, limit - 1, limit, limit + 1, limit + 33}) {
      const auto msg =
          bytes_of(len + 1, static_cast<uint8_t>(len + limit));  // never a null pointer
      send_handle h;
      ASSERT_EQ(j[0].terminus().send_fast(t, 512, msg.data(), len, 1000 + len, h), status::ok);
      ++messages;
      notification n;
      std::byte got[notification_inline_bytes];
      ASSERT_TRUE(j[1].receiver().receive(0, n, got));
      EXPECT_EQ(n.length, len);
      EXPECT_EQ(n.metadata, 1000u + len);
      EXPECT_EQ(n.slot, s);
      EXPECT_EQ(n.carried, len <= limit) << len;
      if (len <= limit) {
        EXPECT_EQ(std::memcmp(got, msg.data(), len), 0) << len;
        EXPECT_TRUE(a.untouched()) << "an inline message was also deposited";
      } else {
        EXPECT_EQ(std::memcmp(a.memory + 512, msg.data(), len), 0) << len;
        std::memset(a.memory, static_cast<int>(guarded_area::pattern), a.bytes);
      }
      EXPECT_EQ(j[1].arrivals().packets, messages);
      EXPECT_EQ(j[1].arrivals().messages, messages);
    }
    EXPECT_TRUE(a.guards_intact());
  }
}

// A slot that did not ask (inline_limit 0, the default) gets even the
// shortest fast-mode message at base + offset, as every user of fast mode
// before inline delivery expects.
TEST(hamlyn_inline, a_slot_that_did_not_ask_gets_its_data_at_base_plus_offset) {
  hamlyn_job j(2);
  guarded_area a(j[1], 256);
  const uint32_t s = inline_slot(j[1], a, 0);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 64, 128, true);
  const auto msg = bytes_of(8, 3);
  send_handle h;
  ASSERT_EQ(j[0].terminus().send_fast(t, 8, msg.data(), 8, 5, h), status::ok);
  notification n;
  std::byte got[notification_inline_bytes];
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_FALSE(n.carried);
  EXPECT_EQ(std::memcmp(a.memory + 72, msg.data(), 8), 0);
  // Also in a normal-mode slot that asked: only fast-mode messages are carried.
  guarded_area b(j[1], 256);
  const uint32_t ns = inline_slot(j[1], b, notification_inline_bytes, slot_mode::normal);
  const ticket nt = j[1].slots().make_ticket(ns, 0, 0, 256, true);
  iovec v{const_cast<std::byte*>(msg.data()), 8};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  ASSERT_EQ(j[0].terminus().send(nt, m, h), status::ok);
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_FALSE(n.carried);
  EXPECT_EQ(std::memcmp(b.memory, msg.data(), 8), 0);
}

// The refusals of the receiving interface stand: a wrong key, a revoked
// slot, a range outside the slot: nothing is carried, nothing notified,
// each counted.
TEST(hamlyn_inline, wrong_key_revoked_or_out_of_bounds_carry_nothing) {
  hamlyn_job j(2);
  guarded_area a(j[1], 256);
  const uint32_t s = inline_slot(j[1], a, notification_inline_bytes);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 0, 256, true);
  const auto msg = bytes_of(32, 4);
  send_handle h;
  ticket bad = t;
  bad.protection_key ^= 0x100;
  EXPECT_EQ(j[0].terminus().send_fast(bad, 0, msg.data(), 32, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  ticket outside = t;
  outside.offset = 240;  // 32 bytes from 240 cross the bound (256): refused even though
                         // the message would not have been written there
  EXPECT_EQ(j[0].terminus().send_fast(outside, 0, msg.data(), 32, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 1u);
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_EQ(j[0].terminus().send_fast(t, 0, msg.data(), 32, 1, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  notification n;
  std::byte got[notification_inline_bytes];
  EXPECT_FALSE(j[1].receiver().receive(0, n, got));
  EXPECT_EQ(j[1].arrivals().packets, 0u);
  EXPECT_EQ(j[1].arrivals().messages, 0u);
  EXPECT_TRUE(a.untouched());
}

// A sender checks a fast-mode slot's fields once per set-up and keeps the
// copy (receiving_interface::hold_fast_slot); every packet still reads the
// state and the key. So a revoke refuses the next packet, a rekey refuses
// the old key, and a new set-up of the same slot index (smaller bound, no
// inline delivery, another mode) is checked afresh: nothing of the old
// copy is used.
TEST(hamlyn_inline, a_sender_checked_slot_follows_revoke_rekey_and_a_new_set_up) {
  hamlyn_job j(2);
  guarded_area a(j[1], 256);
  const uint32_t s = inline_slot(j[1], a, notification_inline_bytes);
  const ticket t = j[1].slots().make_ticket(s, fast_index, 0, 256, true);
  const auto msg = bytes_of(32, 6);
  send_handle h;
  notification n;
  std::byte got[notification_inline_bytes];
  auto send = [&](const ticket& tk, uint64_t offset) {
    return j[0].terminus().send_fast(tk, offset, msg.data(), 32, 7, h);
  };
  ASSERT_EQ(send(t, 0), status::ok);  // checked and kept
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_TRUE(n.carried);
  ASSERT_EQ(j[1].slots().revoke(s), status::ok);
  EXPECT_EQ(send(t, 0), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, 1u);
  ASSERT_EQ(j[1].slots().rekey(s, 0x5eed5eed5eedull), status::ok);
  EXPECT_EQ(send(t, 0), status::rejected);  // the old key, on the kept copy
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  const ticket rekeyed = j[1].slots().make_ticket(s, fast_index, 0, 256, true);
  ASSERT_EQ(send(rekeyed, 0), status::ok);
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_EQ(std::memcmp(got, msg.data(), 32), 0);
  // The same index set up again: 64 bytes, no inline delivery.
  ASSERT_EQ(j[1].slots().release_slot(s), status::ok);
  guarded_area b(j[1], 64);
  ASSERT_EQ(inline_slot(j[1], b, 0), s);
  const ticket again = j[1].slots().make_ticket(s, fast_index, 0, 256, true);
  EXPECT_EQ(send(again, 48), status::rejected);  // inside the old bound, outside the new
  EXPECT_EQ(j[1].arrivals().bounds_rejections, 1u);
  ASSERT_EQ(send(again, 16), status::ok);
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_FALSE(n.carried);  // deposited at base + offset: the new slot did not ask
  EXPECT_EQ(std::memcmp(b.memory + 16, msg.data(), 32), 0);
  EXPECT_TRUE(b.guards_intact());
  // And once more as a paranoid slot: fast mode refused.
  ASSERT_EQ(j[1].slots().release_slot(s), status::ok);
  ASSERT_EQ(inline_slot(j[1], b, 0, slot_mode::paranoid), s);
  const ticket paranoid = j[1].slots().make_ticket(s, fast_index, 0, 64, true);
  EXPECT_EQ(send(paranoid, 0), status::rejected);
  EXPECT_EQ(j[1].arrivals().mode_rejections, 1u);
  EXPECT_EQ(j[1].arrivals().messages, 3u);
  EXPECT_TRUE(a.guards_intact());
}

// Behind a busy engine (the work queue and send()), and through the
// receiver's inbound FIFO (private memory, no cross-memory attach), a
// fast-mode message for an inline slot is carried the same way.
TEST(hamlyn_inline, queued_and_fallback_fast_messages_are_carried_too) {
  hamlyn_job j(2, [](card_config& c) {
    c.engine_budget = 1;
    c.packet_size = 256;
    c.cross_memory = false;
  });
  guarded_area a(j[1], 1024), f(j[1], 256);
  const uint32_t s = inline_slot(j[1], a, 0, slot_mode::normal);
  const uint32_t fs = inline_slot(j[1], f, notification_inline_bytes);
  const auto big = bytes_of(192 * 3, 1);  // 3 packets: the engine sends one per kick
  iovec v{const_cast<std::byte*>(big.data()), big.size()};
  message m;
  m.gather = &v;
  m.gather_count = 1;
  send_handle h;
  ASSERT_EQ(j[0].terminus().send(j[1].slots().make_ticket(s, 0, 0, 1024, true), m, h), status::ok);
  const auto msg = bytes_of(72, 2);
  ASSERT_EQ(j[0].terminus().send_fast(j[1].slots().make_ticket(fs, fast_index, 0, 256, true), 0,
                                      msg.data(), 72, 9, h),
            status::ok);
  for (int k = 0; k < 100 && j[0].terminus().state(h) != send_state::sent; ++k)
    j[0].terminus().kick();
  notification n;
  std::byte got[notification_inline_bytes];
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_FALSE(n.carried);
  ASSERT_TRUE(j[1].receiver().receive(0, n, got));
  EXPECT_EQ(n.slot, fs);
  EXPECT_TRUE(n.carried);
  EXPECT_EQ(std::memcmp(got, msg.data(), 72), 0);
  EXPECT_TRUE(f.untouched());
  // Private memory without cross-memory attach: the packet waits in the
  // receiver's inbound FIFO, and the receiver's own arrival carries it.
  std::vector<std::byte> priv(256, std::byte{0x5A});
  const uint32_t ps = inline_slot(j[1], f, 64, slot_mode::fast, area_memory::process,
                                  reinterpret_cast<uint64_t>(priv.data()));
  for (uint32_t len : {64u, 65u}) {
    const auto p = bytes_of(len, 7);
    ASSERT_EQ(j[0].terminus().send_fast(j[1].slots().make_ticket(ps, fast_index, 0, 256, true), 0,
                                        p.data(), len, 11, h),
              status::ok);
    ASSERT_TRUE(j[1].receiver().receive(0, n, got));
    EXPECT_EQ(n.slot, ps);
    EXPECT_EQ(n.carried, len == 64u);
    EXPECT_EQ(std::memcmp(n.carried ? got : priv.data(), p.data(), len), 0) << len;
  }
  EXPECT_GE(j[1].arrivals().fallback_packets, 2u);
}

// --- the AM card's regions ask for inline delivery (card_setup::notify_inline)

nic::card_setup inline_setup(const std::string& job, int me, uint32_t notify_inline,
                             const nic::fault_config& f = {}) {
  nic::card_setup s;
  s.job = job;
  s.nprocs = 2;
  s.my_proc = me;
  s.block_size = 1024;
  s.rx_blocks = 8;
  s.tx_blocks = 16;
  s.attach_timeout_ms = 5000;
  s.notify_inline = notify_inline;
  s.faults = f;
  return s;
}

struct inline_pair {
  std::unique_ptr<nic::hamlyn_am_card> c[2];
  uint32_t block = 0;
  explicit inline_pair(uint32_t notify_inline, const nic::fault_config& f = {}) {
    const std::string job = unique_job("haminl");
    for (int p = 0; p < 2; ++p)
      c[p] = std::make_unique<nic::hamlyn_am_card>(inline_setup(job, p, notify_inline, f));
    for (auto& x : c)
      for (int p = 0; p < 2; ++p) x->attach_peer(p);
    EXPECT_TRUE(c[0]->claim_tx_block(block));
  }
  // Card 0 sends `len` bytes of pattern `seed` (after the wire header).
  std::vector<std::byte> launch(uint32_t len, uint8_t seed) {
    auto body = bytes_of(len - nic::wire_header_size + 1, seed);
    body.pop_back();  // storage kept: data() is never a null pointer, even for no bytes
    std::memcpy(c[0]->tx_block(block) + nic::wire_header_size, body.data(), body.size());
    c[0]->launch(1, block, len);
    return body;
  }
  bool in_card_memory(const std::byte* p) {
    const card_view& v = c[1]->hamlyn().view(1);
    return p >= v.area && p < v.area + v.geo.area_bytes;
  }
};

// Packets on either side of notify_inline arrive byte-exact: up to it in
// place in the entry, longer ones in place in their block; with
// notify_inline 0 every packet is in its block. The card's entries are the
// shortest of 128, 256 and 512 bytes that hold notify_inline.
TEST(hamlyn_inline, am_card_packets_either_side_of_the_limit_arrive_byte_exact) {
  for (uint32_t limit :
       {0u, 64u, notification_inline_bytes, 97u, 224u, 300u, max_notification_inline_bytes}) {
    inline_pair j(limit);
    EXPECT_EQ(j.c[1]->hamlyn().view(1).geo.notify_entry_bytes, limit <= 96    ? 128u
                                                               : limit <= 224 ? 256u
                                                                              : 512u);
    for (uint32_t len : {16u, 17u, 63u, 64u, 65u, 95u, 96u, 97u, 128u, 129u, 200u, 223u, 224u, 225u,
                         300u, 479u, 480u, 481u, 1024u}) {
      const auto body = j.launch(len, static_cast<uint8_t>(len));
      nic::rx_packet p;
      ASSERT_TRUE(j.c[1]->receive(p)) << limit << " " << len;
      EXPECT_TRUE(p.crc_ok);
      EXPECT_EQ(p.length, len);
      EXPECT_EQ(p.src, 0);
      EXPECT_EQ(std::memcmp(p.data + nic::wire_header_size, body.data(), body.size()), 0) << len;
      EXPECT_EQ(j.in_card_memory(p.data), len > limit) << limit << " " << len;
      j.c[1]->release(p);
      EXPECT_FALSE(j.c[1]->receive(p));
    }
    EXPECT_EQ(j.c[1]->malformed(), 0u);
  }
  EXPECT_THROW(inline_pair(max_notification_inline_bytes + 1), std::invalid_argument);
}

// Inline delivery changes where a packet travels, not the flow control: a
// sender still takes a block of its region for each packet and waits (or
// drops) when none is free, and blocks come back as the receiver releases.
TEST(hamlyn_inline, am_card_inline_packets_still_take_and_return_blocks) {
  inline_pair j(notification_inline_bytes);
  const uint32_t per = j.c[1]->blocks_per_sender();
  std::vector<uint32_t> blocks(per + 1);
  for (auto& b : blocks) ASSERT_TRUE(j.c[0]->claim_tx_block(b));
  for (uint32_t i = 0; i < per + 1; ++i) {  // one more than the region holds: it waits
    std::memcpy(j.c[0]->tx_block(blocks[i]) + nic::wire_header_size, &i, sizeof i);
    j.c[0]->launch(1, blocks[i], 64);
  }
  std::vector<uint32_t> got;
  nic::rx_packet p;
  for (int round = 0; round < 3; ++round) {
    while (j.c[1]->receive(p)) {
      uint32_t tag;
      std::memcpy(&tag, p.data + nic::wire_header_size, sizeof tag);
      got.push_back(tag);
      j.c[1]->release(p);
    }
    j.c[0]->service();  // the waiting packet goes out when a block comes back
  }
  ASSERT_EQ(got.size(), per + 1);
  for (uint32_t i = 0; i < per + 1; ++i) EXPECT_EQ(got[i], i);
  EXPECT_EQ(j.c[1]->overflow_drops(), 0u);
}

// A process mapping the receiver's card writes an entry for the reader's
// cursor naming sender 0's real slot, saying it carries a packet one byte
// longer than an entry holds (97 in 128-byte entries, 481 in 512-byte
// ones): the reader counts it and passes over, the honest packet after it
// (as long as the room) is delivered.
TEST(hamlyn_inline, am_card_a_forged_oversized_carried_entry_is_counted) {
  for (uint32_t limit : {notification_inline_bytes, max_notification_inline_bytes}) {
    inline_pair j(limit);
    const auto body = j.launch(64, 1);  // learn the real slot from an honest packet
    nic::rx_packet p;
    ASSERT_TRUE(j.c[1]->receive(p));
    j.c[1]->release(p);
    const card_view& v = j.c[0]->hamlyn().view(1);  // the hostile mapping
    const notification_reader& r = j.c[1]->hamlyn().receiver().reader(0);
    const notification_ring ring = v.ring(0);
    ASSERT_EQ(ring.room(), limit);
    notification_entry& e = ring.at(r.cursor);
    e.slot = ring.at(r.cursor - 1).slot;  // the honest packet's
    e.metadata_index = fast_index;
    e.source = 0;
    e.metadata = 1;
    e.length = limit + 1;
    e.flags = entry_flag_carried;
    e.wrap_flag.store(encode_wrap_flag(r.cursor, entry_state::written));
    v.queue(0)->cursor.store(r.cursor + 1);
    const auto next = j.launch(limit, 2);
    ASSERT_TRUE(j.c[1]->receive(p));
    EXPECT_TRUE(p.crc_ok);
    EXPECT_EQ(p.length, limit);
    EXPECT_FALSE(j.in_card_memory(p.data));  // in its entry
    EXPECT_EQ(std::memcmp(p.data + nic::wire_header_size, next.data(), next.size()), 0);
    j.c[1]->release(p);
    EXPECT_FALSE(j.c[1]->receive(p));
    EXPECT_EQ(r.malformed, 1u) << limit;
  }
}

// The wire's faults on short packets: a corrupted copy (the wire's own
// copy, not the block) fails its CRC, a duplicate arrives twice, a held
// packet arrives later, each through the entry.
TEST(hamlyn_inline, am_card_faults_on_inline_packets) {
  nic::fault_config corrupt;
  corrupt.corrupt = 1.0;
  inline_pair c(notification_inline_bytes, corrupt);
  for (int i = 0; i < 20; ++i) {
    (void)c.launch(72, static_cast<uint8_t>(i));
    nic::rx_packet p;
    ASSERT_TRUE(c.c[1]->receive(p));
    EXPECT_FALSE(p.crc_ok);
    EXPECT_FALSE(c.in_card_memory(p.data));
    c.c[1]->release(p);
  }
  nic::fault_config dup;
  dup.duplicate = 1.0;
  inline_pair u(notification_inline_bytes, dup);
  const auto body = u.launch(72, 3);
  for (int copy = 0; copy < 2; ++copy) {
    nic::rx_packet p;
    ASSERT_TRUE(u.c[1]->receive(p)) << copy;
    EXPECT_TRUE(p.crc_ok);
    EXPECT_EQ(std::memcmp(p.data + nic::wire_header_size, body.data(), body.size()), 0);
    u.c[1]->release(p);
  }
  nic::fault_config delay;
  delay.delay = 1.0;
  delay.delay_ns = 1;
  inline_pair d(notification_inline_bytes, delay);
  const auto held = d.launch(48, 4);
  nic::rx_packet p;
  EXPECT_FALSE(d.c[1]->receive(p));
  for (int k = 0; k < 1000 && !d.c[1]->receive(p); ++k) d.c[0]->service();
  ASSERT_TRUE(p.crc_ok);
  EXPECT_EQ(p.length, 48u);
  EXPECT_EQ(std::memcmp(p.data + nic::wire_header_size, held.data(), held.size()), 0);
  EXPECT_EQ(d.c[0]->wire_stats().delayed, 1u);
}

}  // namespace
}  // namespace hpam::test
