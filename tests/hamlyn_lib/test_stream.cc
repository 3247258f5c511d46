// The stream protocol: in order and byte for byte (also when the wire
// reorders and delays records), coalescing of small sends, receive without
// a copy, release up to a record, a sender out of tickets that waits and
// never overruns, the receiver allocating more buffers; lying records and
// credits are counted and change nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "hamlyn_lib/stream.hpp"
#include "lib_fixture.hpp"

namespace hpam::test {
namespace {

using namespace hamlyn_lib;
namespace hw = nic::hamlyn;

struct stream_case : two_managers {
  stream_case() : two_managers(1024, 1024) {}
};

// Receives what has arrived into `out`, releasing each record.
void drain(stream_receiver& r, std::vector<std::byte>& out) {
  stream_record rec;
  while (r.receive(rec)) {
    out.insert(out.end(), rec.data, rec.data + rec.length);
    ASSERT_EQ(r.release(rec.id), status::ok);
  }
}

TEST_F(stream_case, bytes_arrive_in_order_with_and_without_coalescing) {
  // Every send here fits the region with room to spare: sender and receiver
  // share one thread, so a record waiting for the whole region would wait
  // for a release that only comes after it.
  stream_config cfg;
  cfg.buffer_bytes = 256 << 10;
  cfg.max_regions = 2;
  for (uint32_t coalesce : {0u, 4096u}) {
    stream_receiver r(rm, cfg);
    stream_sender s;
    ASSERT_EQ(s.open(sm, r.make_seed(), coalesce), status::ok);
    std::vector<std::byte> sent, got;
    const uint32_t sizes[] = {1, 7, 100, 4095, 4096, 5000, 3, 70000, 12, 65536, 200};
    for (int round = 0; round < 20; ++round)
      for (uint32_t n : sizes) {
        const auto b = bytes_of(n, static_cast<uint8_t>(round * 11 + n));
        sent.insert(sent.end(), b.begin(), b.end());
        ASSERT_EQ(s.send(b.data(), n), status::ok);
        drain(r, got);
      }
    ASSERT_EQ(s.flush(), status::ok);
    ASSERT_TRUE(rm.wait_until(
        [&] {
          drain(r, got);
          return got.size() == sent.size();
        },
        10'000'000'000ull));
    EXPECT_EQ(got, sent) << "coalesce " << coalesce;
    EXPECT_EQ(r.counters().malformed, 0u);
    if (coalesce)
      EXPECT_GT(s.counters().coalesced, 0u);
    else
      EXPECT_EQ(s.counters().coalesced, 0u);
  }
}

TEST_F(stream_case, small_sends_are_coalesced_into_one_record_at_flush) {
  stream_receiver r(rm);
  stream_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed(), 4096), status::ok);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.send("0123456789", 10), status::ok);
  stream_record rec;
  EXPECT_FALSE(r.receive(rec));  // nothing forced out yet
  ASSERT_EQ(s.flush(), status::ok);
  ASSERT_TRUE(r.receive_block(rec, 5'000'000'000ull));
  EXPECT_EQ(rec.length, 1000u);
  EXPECT_EQ(rec.id, 1u);
  EXPECT_EQ(std::memcmp(rec.data + 990, "0123456789", 10), 0);
  EXPECT_FALSE(r.receive(rec));
  EXPECT_EQ(s.counters().records, 2u);  // the hello and one record
  // Without coalescing each send is a record.
  stream_receiver r2(rm);
  stream_sender s2;
  ASSERT_EQ(s2.open(sm, r2.make_seed(), 0), status::ok);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(s2.send("0123456789", 10), status::ok);
  for (uint64_t id = 1; id <= 10; ++id) {
    ASSERT_TRUE(r2.receive_block(rec, 5'000'000'000ull));
    EXPECT_EQ(rec.id, id);
    EXPECT_EQ(rec.length, 10u);
  }
}

TEST_F(stream_case, receive_does_not_copy_and_release_frees_up_to_a_record) {
  stream_receiver r(rm);
  stream_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed(), 0), status::ok);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(s.send("abcdefgh", 8), status::ok);
  const std::byte* area = j[1].slots().area_address(0);
  const uint64_t area_bytes = j[1].view(1).geo.area_bytes;
  stream_record rec[5];
  for (auto& x : rec) {
    ASSERT_TRUE(r.receive_block(x, 5'000'000'000ull));
    EXPECT_TRUE(x.data >= area && x.data + x.length <= area + area_bytes);  // in the card's buffer
  }
  EXPECT_EQ(r.release(6), status::invalid_argument);  // not received
  EXPECT_EQ(r.release(0), status::invalid_argument);  // not the application's
  EXPECT_EQ(r.release(3), status::ok);                // 1, 2 and 3
  EXPECT_EQ(r.release(2), status::invalid_argument);  // already released
  EXPECT_EQ(r.release(5), status::ok);
  EXPECT_EQ(r.counters().credits, 2u);
}

TEST_F(stream_case, a_sender_out_of_tickets_waits_and_never_overruns) {
  stream_config cfg;
  cfg.records = 4;
  cfg.buffer_bytes = 4096;
  cfg.max_regions = 1;
  stream_receiver r(rm, cfg);
  stream_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed(), 0, 20'000'000), status::ok);  // waits 20 ms
  const auto a = bytes_of(1000, 1), b = bytes_of(1000, 2), c = bytes_of(1000, 3),
             d = bytes_of(1000, 4);
  ASSERT_EQ(s.send(a.data(), 1000), status::ok);
  ASSERT_EQ(s.send(b.data(), 1000), status::ok);
  ASSERT_EQ(s.send(c.data(), 1000), status::ok);
  EXPECT_EQ(s.send(d.data(), 1000), status::would_block);  // four entries: the hello and 3
  EXPECT_GT(s.counters().waits, 0u);
  stream_record rec;
  ASSERT_TRUE(r.receive(rec));
  EXPECT_EQ(std::memcmp(rec.data, a.data(), 1000), 0);
  ASSERT_EQ(r.release(rec.id), status::ok);  // frees the hello and record 1
  ASSERT_EQ(s.send(d.data(), 1000), status::ok);
  const std::vector<std::byte>* want[] = {&b, &c, &d};
  for (auto* w : want) {
    ASSERT_TRUE(r.receive_block(rec, 5'000'000'000ull));
    EXPECT_EQ(std::memcmp(rec.data, w->data(), 1000), 0);  // nothing written over
  }
  // Out of room rather than tickets: one 4000-byte record fills the buffer.
  const auto big = bytes_of(4000, 9);
  EXPECT_EQ(s.send(big.data(), 4000), status::would_block);
  ASSERT_EQ(r.release(rec.id), status::ok);
  ASSERT_EQ(s.send(big.data(), 4000), status::ok);
  ASSERT_TRUE(r.receive_block(rec, 5'000'000'000ull));
  EXPECT_EQ(std::memcmp(rec.data, big.data(), 4000), 0);
}

TEST_F(stream_case, the_receiver_allocates_more_buffers_when_records_are_held) {
  stream_config cfg;
  cfg.records = 8;
  cfg.buffer_bytes = 8192;
  cfg.max_regions = 3;
  stream_receiver r(rm, cfg);
  stream_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed(), 0, 20'000'000), status::ok);
  std::vector<stream_record> held;
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0;; ++i) {
    sent.push_back(bytes_of(1024, static_cast<uint8_t>(i)));
    const status st = s.send(sent.back().data(), 1024);
    stream_record rec;
    while (r.receive(rec)) held.push_back(rec);  // received, never released
    if (st == status::would_block) {
      sent.pop_back();
      break;
    }
    ASSERT_EQ(st, status::ok);
    ASSERT_LT(i, 100);
  }
  EXPECT_EQ(r.regions(), 3u);
  EXPECT_EQ(s.regions(), 3u);
  EXPECT_EQ(s.counters().grants, 2u);
  EXPECT_GT(sent.size(), 8u);  // more than the first region's tickets
  ASSERT_EQ(held.size(), sent.size());
  for (size_t i = 0; i < held.size(); ++i)
    EXPECT_EQ(std::memcmp(held[i].data, sent[i].data(), 1024), 0) << i;  // all held, none overrun
  ASSERT_EQ(r.release(held.back().id), status::ok);
  ASSERT_EQ(s.send(sent[0].data(), 1024), status::ok);
}

TEST_F(stream_case, records_reordered_and_delayed_by_the_wire_come_out_in_order) {
  stream_receiver r(rm);
  stream_sender s;
  nic::fault_config f;
  f.reorder = 0.3;
  f.delay = 0.1;
  f.delay_ns = 200'000;
  f.seed = 25;
  nic::fault_config bad = f;
  bad.drop = 0.01;
  EXPECT_EQ(s.set_faults(bad), status::invalid_argument);  // Hamlyn assumes no loss
  ASSERT_EQ(s.set_faults(f), status::ok);
  ASSERT_EQ(s.open(sm, r.make_seed(), 512), status::ok);
  std::vector<std::byte> sent, got;
  for (int i = 0; i < 600; ++i) {
    const uint32_t n = 1 + static_cast<uint32_t>(i * 977) % 3000;
    const auto b = bytes_of(n, static_cast<uint8_t>(i));
    sent.insert(sent.end(), b.begin(), b.end());
    ASSERT_EQ(s.send(b.data(), n), status::ok);
    drain(r, got);
  }
  ASSERT_EQ(s.flush(), status::ok);
  ASSERT_TRUE(rm.wait_until(
      [&] {
        drain(r, got);
        return got.size() == sent.size();
      },
      10'000'000'000ull));
  EXPECT_EQ(got, sent);
  ASSERT_NE(s.wire_stats(), nullptr);
  EXPECT_GT(s.wire_stats()->reordered, 10u);
  EXPECT_GT(s.wire_stats()->delayed, 5u);
}

// A sender with the region's ticket that lies: a record outside the
// window, one past the region, a duplicate id; a credit releasing records
// never sent. Counted; the stream goes on intact.
TEST_F(stream_case, lying_records_and_credits_are_counted_and_change_nothing) {
  stream_receiver r(rm);
  const seed sd = r.make_seed();
  stream_sender s;
  ASSERT_EQ(s.open(sm, sd, 0), status::ok);
  ASSERT_EQ(s.send("first", 5), status::ok);
  auto lie = [&](uint64_t seq, uint32_t offset, uint32_t length, uint32_t entry) {
    stream_record_metadata m{seq, offset, length, 0};
    std::byte meta[stream_record_metadata_bytes];
    std::memcpy(meta, &m, sizeof meta);
    hw::ticket t = sd.target;
    t.metadata_index = entry;
    t.offset = 60000;
    t.range = 8;
    const iovec piece{const_cast<char*>("XXXXXXXX"), 8};
    hw::message msg;
    msg.gather = &piece;
    msg.gather_count = 1;
    msg.metadata = meta;
    msg.metadata_length = sizeof meta;
    hw::send_handle h;
    ASSERT_EQ(j[0].terminus().send(t, msg, h), status::ok);
    ASSERT_EQ(sm.wait_sent(h), status::ok);
  };
  lie(1000000, 0, 8, 30);  // far outside the window
  lie(2, 65530, 8, 31);    // past the region
  lie(1, 0, 8, 32);        // record 1 again
  stream_record rec;
  ASSERT_TRUE(r.receive_block(rec, 5'000'000'000ull));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rec.data), rec.length), "first");
  // (record 1 again is a duplicate whether it is dispatched before or after record 1 is taken)
  ASSERT_TRUE(rm.wait_until([&] { return r.counters().malformed == 3; }, 5'000'000'000ull));
  // A credit that releases records never sent: the sender ignores it.
  const hw::slot& region0 = j[1].slots().slot_at(sd.target.slot);
  hw::ticket credit;
  std::memcpy(&credit, j[1].slots().area_address(region0.base), sizeof credit);  // the hello's data
  credit.metadata_index = hw::fast_index;
  stream_credit c{};
  c.released = 99;
  c.kind = stream_credit_release;
  hw::send_handle h;
  ASSERT_EQ(
      j[1].terminus().send_fast(credit, 0, reinterpret_cast<const std::byte*>(&c), sizeof c, 0, h),
      status::ok);
  (void)sm.poll_nowait();
  EXPECT_EQ(s.counters().malformed, 1u);
  ASSERT_EQ(s.send("second", 6), status::ok);
  ASSERT_EQ(r.release(rec.id), status::ok);
  ASSERT_TRUE(r.receive_block(rec, 5'000'000'000ull));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rec.data), rec.length), "second");
}

TEST_F(stream_case, a_forged_stream_seed_is_refused) {
  stream_receiver r(rm);
  seed sd = r.make_seed();
  sd.target.protection_key += 1;
  stream_sender s;
  EXPECT_EQ(s.open(sm, sd), status::rejected);
  EXPECT_EQ(s.send("x", 1), status::invalid_argument);
  EXPECT_EQ(sm.counters().seeds_refused, 1u);
  EXPECT_THROW(stream_receiver(rm, stream_config{0, 4096, 1}), std::invalid_argument);
  EXPECT_THROW(stream_receiver(rm, stream_config{64, 4096, 64}), std::invalid_argument);
}

// Across processes, with a receiver slower than its sender.
TEST(stream_fork, a_stream_crosses_processes_in_order) {
  const std::string job = unique_job("hstream");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  constexpr uint64_t total = 3u << 20;
  const pid_t child = fork_child([&] {
    hw::card c(hamlyn_config(job, 2, 1));
    c.attach_all();
    hamlyn_manager m(c);
    stream_config cfg;
    cfg.records = 16;
    cfg.buffer_bytes = 32768;
    cfg.max_regions = 2;
    stream_receiver r(m, cfg);
    const seed s = r.make_seed();
    if (write(fds[1], &s, sizeof s) != sizeof s) return 2;
    const auto want = bytes_of(total, 77);
    uint64_t at = 0;
    stream_record rec;
    while (at < total) {
      if (!r.receive_block(rec, 20'000'000'000ull)) return 3;
      if (rec.length > total - at || std::memcmp(rec.data, want.data() + at, rec.length) != 0)
        return 4;
      at += rec.length;
      if (rec.id % 3 == 0 && r.release(rec.id) != status::ok) return 5;  // releases in batches
    }
    return r.counters().malformed == 0 ? 0 : 6;
  });
  hw::card c(hamlyn_config(job, 2, 0));
  c.attach_all();
  hamlyn_manager m(c);
  seed s;
  ASSERT_EQ(read(fds[0], &s, sizeof s), static_cast<ssize_t>(sizeof s));
  stream_sender w;
  ASSERT_EQ(w.open(m, s, 2048), status::ok);
  const auto data = bytes_of(total, 77);
  uint64_t at = 0;
  for (uint64_t i = 0; at < total; ++i) {
    const uint64_t n = std::min<uint64_t>(total - at, 1 + (i * 7919) % 20000);
    ASSERT_EQ(w.send(data.data() + at, n), status::ok);
    at += n;
  }
  ASSERT_EQ(w.flush(), status::ok);
  EXPECT_EQ(reap(child), 0);
  EXPECT_GT(w.counters().waits, 0u);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace hpam::test
