// The Hamlyn receiving interface against a sender that holds the right key
// but lies in its packets or races other senders and the owner: no byte
// read outside the range asked for, one message per one-shot arming,
// nothing counted or notified after revoke returns.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "hamlyn_fixture.hpp"

namespace hpam::test {
namespace {

using namespace nic::hamlyn;

struct replies {
  std::vector<std::byte> bytes;  // every reply byte, in arrival order
  uint64_t packets = 0;
  uint64_t max_end = 0;  // highest offset + length seen
};
bool on_reply(void* ctx, card&, const packet_header& h, const std::byte* payload) {
  auto* r = static_cast<replies*>(ctx);
  r->packets++;
  r->bytes.insert(r->bytes.end(), payload, payload + h.length);
  r->max_end = std::max<uint64_t>(r->max_end, h.offset + h.length);
  return true;
}

// A normal slot over the first `bound` bytes of `a` (process 1's card), one
// metadata entry.
status make_read_slot(hamlyn_job& j, const guarded_area& a, uint64_t bound, uint32_t& s) {
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = bound;
  spec.metadata_count = 1;
  return j[1].slots().create_slot(spec, s);
}

// Process 0's request to read `length` bytes of slot s at process 1, with
// the right key.
packet_header read_request(hamlyn_job& j, uint32_t s, uint64_t length) {
  packet_header h{};
  h.destination = 1;
  h.source = 0;
  h.slot = s;
  h.protection_key = j[1].slots().slot_at(s).protection_key.load();
  h.length = length;
  h.flags = encode_flags(packet_kind::read_request, false);
  return h;
}

// Process 0's deposit of 8 bytes at offset 0 of slot s at process 1, in
// one packet, with `key`; notify: whether it asks for a notification.
packet_header single_deposit_of_8(uint32_t s, uint64_t key, bool notify) {
  packet_header h{};
  h.destination = 1;
  h.slot = s;
  h.protection_key = key;
  h.length = 8;
  h.flags = encode_flags(packet_kind::data, notify) | flag_single;
  return h;
}

// A read request whose own fields claim progress past its range (the old
// code kept its progress in the request's `reserved` word): the owner
// answers exactly the 16 bytes of the ticket, never what lies after them.
TEST(hamlyn_hostile, a_read_request_reads_nothing_outside_its_range) {
  hamlyn_job j(2, [](card_config& c) {
    c.cross_memory = false;
    c.packet_size = 512;
  });
  guarded_area a(j[1], 4096);  // the slot covers the first 16 bytes only
  std::memset(a.memory, 0x11, 16);
  std::memset(a.memory + 16, 0x5E, 4096 - 16);  // the owner's other data
  uint32_t s;
  ASSERT_EQ(make_read_slot(j, a, 16, s), status::ok);
  replies got;
  j[0].receiver().set_handler(packet_kind::reply, on_reply, &got);
  for (uint64_t claimed : {uint64_t{32}, uint64_t{17}, ~uint64_t{0} - 100}) {
    got = replies{};
    packet_header h = read_request(j, s, 16);
    h.reserved = claimed;
    ASSERT_TRUE(j[0].push_packet(1, h, nullptr, 0));
    (void)j[1].receiver().poll_inbound();
    (void)j[0].receiver().poll_inbound();
    EXPECT_EQ(got.bytes.size(), 16u) << "claimed " << claimed;
    EXPECT_EQ(got.max_end, 16u);
    for (std::byte b : got.bytes) ASSERT_EQ(b, std::byte{0x11}) << "claimed " << claimed;
  }
}

// A read request whose answer meets a full FIFO is kept and served again
// later; meanwhile its sender rewrites the request in the owner's inbound
// buffer (length, offset, progress). The owner goes on from its own copy of
// the header, read once at arrival: exactly the 256 bytes asked for, never
// what the rewritten request names (issue 12: fields read once).
TEST(hamlyn_hostile, a_request_rewritten_after_arrival_is_served_as_it_arrived) {
  hamlyn_job j(2, [](card_config& c) {
    c.cross_memory = false;
    c.packet_size = 128;  // 64 data bytes per reply packet
    c.rx_packets = 2;     // the requester takes two replies at a time
  });
  guarded_area a(j[1], 4096);
  std::memset(a.memory, 0x11, 256);
  std::memset(a.memory + 256, 0x5E, 4096 - 256);  // the owner's other data
  uint32_t s;
  ASSERT_EQ(make_read_slot(j, a, 4096, s), status::ok);
  replies got;
  j[0].receiver().set_handler(packet_kind::reply, on_reply, &got);
  const packet_header h = read_request(j, s, 256);
  ASSERT_TRUE(j[0].push_packet(1, h, nullptr, 0));
  (void)j[1].receiver().poll_inbound();  // two replies fit; the request waits with its progress
  ASSERT_EQ(got.packets, 0u);
  packet_header lie = h;
  lie.offset = 256;
  lie.length = 4096 - 256;
  lie.reserved = 4096;
  // Wherever the request lies: its rx_ready cell (a header alone fits
  // there) or an inbound buffer.
  for (uint64_t b = 0; b < 2; ++b) std::memcpy(j[1].view(1).rx_buffer(b), &lie, sizeof lie);
  uint64_t entry;
  const std::byte* cell = j[1].view(1).rx_ready.ready(0, entry);
  ASSERT_NE(cell, nullptr);
  std::memcpy(const_cast<std::byte*>(cell) + sys::cell_fifo::head_bytes, &lie, sizeof lie);
  for (int round = 0; round < 8 && got.max_end < 256; ++round) {
    (void)j[0].receiver().poll_inbound();
    (void)j[1].receiver().poll_inbound();
  }
  (void)j[0].receiver().poll_inbound();
  EXPECT_EQ(got.bytes.size(), 256u);
  EXPECT_EQ(got.max_end, 256u);
  for (std::byte b : got.bytes) ASSERT_EQ(b, std::byte{0x11});
  EXPECT_TRUE(a.guards_intact());
}

// Two senders race for one paranoid one-shot entry: the first packet of
// sender 0's two-packet message claims it, so sender 2's message (arriving
// before sender 0's last packet) is refused; the entry completes once.
TEST(hamlyn_hostile, one_shot_admits_one_sender_even_while_its_message_is_incomplete) {
  hamlyn_job j(3);
  guarded_area a(j[1], 4096);
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.mode = slot_mode::paranoid_one_shot;
  spec.metadata_count = 1;
  uint32_t s;
  ASSERT_EQ(j[1].slots().create_slot(spec, s), status::ok);
  ASSERT_EQ(j[1].slots().set_paranoid(s, 0, 0x0E5407, 0, 4096), status::ok);
  auto packet = [&](uint32_t source, uint64_t offset, uint32_t delta, uint32_t flags) {
    packet_header h{};
    h.destination = 1;
    h.source = source;
    h.slot = s;
    h.metadata_index = 0;
    h.protection_key = 0x0E5407;
    h.offset = offset;
    h.length = 100;
    h.delta = delta;
    h.flags = flags;
    return h;
  };
  const uint32_t notify = encode_flags(packet_kind::data, true);
  std::vector<std::byte> zeros(100, std::byte{0}), twos(100, std::byte{2});
  iovec z{zeros.data(), 100}, t{twos.data(), 100};
  // Sender 0: first packet of two (delta 1; the last will bring 2^32 - 1).
  EXPECT_EQ(j[0].receiver().arrive(j[0].view(1), packet(0, 0, 1, notify), &z, 1, nullptr, false),
            status::ok);
  // Sender 2: a whole single-packet message into the same entry.
  EXPECT_EQ(j[2].receiver().arrive(j[2].view(1), packet(2, 0, 0, notify | flag_single), &t, 1,
                                   nullptr, false),
            status::rejected);
  EXPECT_EQ(j[1].arrivals().mode_rejections, 1u);
  // Sender 0's last packet completes its message.
  EXPECT_EQ(j[0].receiver().arrive(j[0].view(1), packet(0, 100, 0xFFFFFFFFu, notify), &z, 1,
                                   nullptr, false),
            status::ok);
  notification n;
  ASSERT_TRUE(j[1].receiver().receive(0, n));
  EXPECT_EQ(n.source, 0u);
  EXPECT_FALSE(j[1].receiver().receive(0, n));
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(a.memory[i], std::byte{0}) << i;  // sender 2 wrote nothing
  EXPECT_EQ(j[1].slots().metadata(s, 0)->packet_accumulator.load(), 0u);
}

// A sender keeps completing single-packet messages while the owner revokes
// the slot again and again: once revoke has returned, no notification of
// that slot may still appear (the old code let the sender finish its
// counting after it had let go of the slot).
TEST(hamlyn_hostile, nothing_is_counted_or_notified_after_revoke_returns) {
  hamlyn_job j(2, [](card_config& c) { c.notify_capacity = 1 << 16; });
  guarded_area a(j[1], 256);
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.metadata_count = 1;
  uint32_t s;
  ASSERT_EQ(j[1].slots().create_slot(spec, s), status::ok);
  const uint64_t key = j[1].slots().slot_at(s).protection_key.load();
  std::atomic<bool> stop{false};
  std::thread sender([&] {
    std::vector<std::byte> data(8, std::byte{1});
    iovec d{data.data(), data.size()};
    const packet_header h = single_deposit_of_8(s, key, true);
    while (!stop.load(std::memory_order_relaxed))
      (void)j[0].receiver().arrive(j[0].view(1), h, &d, 1, nullptr, false);
  });
  const notification_queue_control& q = *j[1].view(1).queue(0);
  int late = 0;
  for (int round = 0; round < 2000 && late == 0; ++round) {
    ASSERT_EQ(j[1].slots().revoke(s), status::ok);
    const uint64_t after = q.cursor.load();
    for (int spin = 0; spin < 20; ++spin) std::this_thread::yield();  // the sender tries meanwhile
    if (q.cursor.load() != after) ++late;
    notification n;
    while (j[1].receiver().receive(0, n)) {
    }
    ASSERT_EQ(j[1].slots().rekey(s, key), status::ok);
  }
  stop = true;
  sender.join();
  EXPECT_EQ(late, 0);
}

// A card whose metadata pool holds 8 entries (and 16 slots), and a slot
// spec asking for n of them.
void eight_metadata_entries(card_config& c) {
  c.slot_count = 16;
  c.metadata_entries = 8;
}
slot_spec slot_of_entries(uint32_t n) {
  slot_spec s;
  s.base = 0;
  s.bound = 64;
  s.metadata_count = n;
  return s;
}

// The metadata pool's free ranges as an MPI rendezvous uses them (a slot
// with one entry made and dropped per message; create_slot keeps the node of
// an exactly fitting range for the next release_slot): no entry is lost or
// handed out twice, so after any number of rounds every entry is taken by
// one slot each, one more is refused, and once they are given back they
// are taken again.
TEST(hamlyn_card, metadata_entries_given_back_are_neither_lost_nor_shared) {
  hamlyn_job j(1, eight_metadata_entries);
  slot_table& t = j[0].slots();
  const slot_spec spec = slot_of_entries(1);
  for (int round = 0; round < 1000; ++round) {  // one at a time, then two overlapping
    uint32_t a, b;
    ASSERT_EQ(t.create_slot(spec, a), status::ok);
    ASSERT_EQ(t.create_slot(spec, b), status::ok);
    ASSERT_NE(t.metadata(a, 0), t.metadata(b, 0));
    ASSERT_EQ(t.release_slot(round % 2 ? a : b), status::ok);
    ASSERT_EQ(t.release_slot(round % 2 ? b : a), status::ok);
  }
  std::vector<uint32_t> slots;
  std::vector<metadata_entry*> entries;
  for (uint32_t s; is_ok(t.create_slot(spec, s));) {
    slots.push_back(s);
    entries.push_back(t.metadata(s, 0));
  }
  EXPECT_EQ(slots.size(), 8u);  // every entry, and then no_resource
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(std::adjacent_find(entries.begin(), entries.end()), entries.end());
  uint32_t s;
  EXPECT_EQ(t.create_slot(spec, s), status::no_resource);
  for (uint32_t x : slots) ASSERT_EQ(t.release_slot(x), status::ok);
  for (uint32_t k = 0; k < 8; ++k) ASSERT_EQ(t.create_slot(spec, slots[k]), status::ok);
  EXPECT_EQ(t.create_slot(spec, s), status::no_resource);
  for (uint32_t x : slots) ASSERT_EQ(t.release_slot(x), status::ok);
}

// Ranges given back join the free ranges they touch, in whatever order
// they come back: after single entries all come back, the whole pool is one
// range again (a slot of all 8 entries is made), and a range between two
// taken ones, once both neighbours return, joins them.
TEST(hamlyn_card, metadata_ranges_given_back_join_their_neighbours) {
  hamlyn_job j(1, eight_metadata_entries);
  slot_table& t = j[0].slots();
  const slot_spec one = slot_of_entries(1), all = slot_of_entries(8);
  uint32_t s[8];
  for (uint32_t& x : s) ASSERT_EQ(t.create_slot(one, x), status::ok);
  for (uint32_t k : {3u, 1u, 7u, 0u, 5u, 2u, 6u, 4u}) ASSERT_EQ(t.release_slot(s[k]), status::ok);
  uint32_t whole;
  ASSERT_EQ(t.create_slot(all, whole), status::ok) << "the pool stayed in pieces";
  uint32_t none;
  EXPECT_EQ(t.create_slot(one, none), status::no_resource);
  ASSERT_EQ(t.release_slot(whole), status::ok);
  const slot_spec two = slot_of_entries(2);
  uint32_t a, b, c;
  ASSERT_EQ(t.create_slot(two, a), status::ok);
  ASSERT_EQ(t.create_slot(two, b), status::ok);
  ASSERT_EQ(t.create_slot(two, c), status::ok);
  ASSERT_EQ(t.release_slot(a), status::ok);
  ASSERT_EQ(t.release_slot(c), status::ok);
  ASSERT_EQ(t.release_slot(b), status::ok);  // joins both sides
  ASSERT_EQ(t.create_slot(all, whole), status::ok);
  ASSERT_EQ(t.release_slot(whole), status::ok);
}

// A slot released with one metadata entry stays revoked as a spare until
// the next one-entry slot takes it back (slot_table::spare_slots_max, what
// an MPI rendezvous's registration per message saves): meanwhile a deposit
// with its ticket is refused and counted, nothing written, and the owner's
// calls on it are refused as on a freed slot; taken back, it has a new
// generation and key, so the old ticket stays refused. Once spares hold
// every slot, a slot of two entries still gets one (the spares are given
// back first).
TEST(hamlyn_card, a_released_slot_kept_as_a_spare_refuses_its_old_ticket) {
  hamlyn_job j(2, [](card_config& c) {
    c.slot_count = 4;
    c.metadata_entries = 8;
  });
  guarded_area a(j[1], 256);
  slot_table& t = j[1].slots();
  slot_spec spec;
  spec.base = a.offset;
  spec.bound = a.bytes;
  spec.metadata_count = 1;
  uint32_t s;
  ASSERT_EQ(t.create_slot(spec, s), status::ok);
  const uint64_t key = t.slot_at(s).protection_key.load();
  const uint32_t generation = t.slot_at(s).generation;
  const packet_header h = single_deposit_of_8(s, key, false);
  std::vector<std::byte> data(8, std::byte{7});
  iovec d{data.data(), data.size()};
  auto deposit = [&](const packet_header& p) {
    return j[0].receiver().arrive(j[0].view(1), p, &d, 1, nullptr, false);
  };
  ASSERT_EQ(deposit(h), status::ok);
  ASSERT_EQ(a.memory[0], std::byte{7});
  std::memset(a.memory, static_cast<int>(guarded_area::pattern), 8);
  ASSERT_EQ(t.release_slot(s), status::ok);
  const uint64_t revoked = j[1].arrivals().revoked_rejections;
  EXPECT_EQ(deposit(h), status::rejected);
  EXPECT_EQ(j[1].arrivals().revoked_rejections, revoked + 1);
  EXPECT_TRUE(a.untouched());
  EXPECT_EQ(t.release_slot(s), status::invalid_argument);
  EXPECT_EQ(t.rekey(s, key), status::invalid_argument);
  EXPECT_EQ(t.metadata(s, 0), nullptr);
  uint32_t again;
  ASSERT_EQ(t.create_slot(spec, again), status::ok);
  EXPECT_EQ(again, s);  // the spare, taken back
  EXPECT_EQ(t.slot_at(s).generation, generation + 1);
  EXPECT_NE(t.slot_at(s).protection_key.load(), key);
  EXPECT_EQ(deposit(h), status::rejected);  // the old ticket
  EXPECT_TRUE(a.untouched());
  packet_header fresh = h;
  fresh.protection_key = t.slot_at(s).protection_key.load();
  EXPECT_EQ(deposit(fresh), status::ok);
  EXPECT_EQ(a.memory[0], std::byte{7});
  // Every slot a spare: a slot of two entries gives them back and takes one.
  uint32_t more[3];
  for (uint32_t& x : more) ASSERT_EQ(t.create_slot(spec, x), status::ok);
  uint32_t none;
  EXPECT_EQ(t.create_slot(spec, none), status::no_resource);
  ASSERT_EQ(t.release_slot(s), status::ok);
  for (uint32_t x : more) ASSERT_EQ(t.release_slot(x), status::ok);
  spec.metadata_count = 2;
  uint32_t two;
  ASSERT_EQ(t.create_slot(spec, two), status::ok);
  EXPECT_NE(t.metadata(two, 1), nullptr);
  spec.metadata_count = 1;
  std::vector<uint32_t> ones;
  for (uint32_t x; is_ok(t.create_slot(spec, x));) ones.push_back(x);
  EXPECT_EQ(ones.size(), 3u);  // the other slots, freed with the spares
  for (uint32_t x : ones) ASSERT_EQ(t.release_slot(x), status::ok);
  ASSERT_EQ(t.release_slot(two), status::ok);
}

}  // namespace
}  // namespace hpam::test
