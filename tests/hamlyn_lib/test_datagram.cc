// The simple datagram protocol: one instance per metadata entry, ready or
// not ready (no queue), offset and length and an optional reply ticket in
// the metadata; lying metadata is counted and makes nothing ready.
#include <gtest/gtest.h>

#include <cstring>

#include "hamlyn_lib/datagram.hpp"
#include "lib_fixture.hpp"

namespace hpam::test {
namespace {

using namespace hamlyn_lib;
namespace hw = nic::hamlyn;

using datagram_case = two_managers;

TEST_F(datagram_case, each_instance_is_ready_or_not_and_carries_its_bytes) {
  datagram_receiver r(rm, 4, 8192);
  datagram_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed()), status::ok);
  const auto a = bytes_of(8192, 3);  // two packets and a bit: DMA, segmented
  const auto b = bytes_of(17, 9);    // direct I/O
  ASSERT_EQ(s.send(2, a.data(), 8192), status::ok);
  ASSERT_EQ(s.send(0, b.data(), 17), status::ok);
  datagram d;
  EXPECT_FALSE(r.receive(1, d));
  EXPECT_FALSE(r.receive_block(3, d, 2'000'000));  // nothing for instance 3: times out
  ASSERT_TRUE(rm.wait_until([&] { return r.ready(0) && r.ready(2); }, 5'000'000'000ull));
  ASSERT_TRUE(r.receive(2, d));
  ASSERT_EQ(d.length, 8192u);
  EXPECT_EQ(std::memcmp(d.data, a.data(), 8192), 0);
  EXPECT_EQ(d.source, 0u);
  EXPECT_FALSE(d.has_reply);
  ASSERT_TRUE(r.receive(0, d));
  ASSERT_EQ(d.length, 17u);
  EXPECT_EQ(std::memcmp(d.data, b.data(), 17), 0);
  r.release(2);
  EXPECT_FALSE(r.receive(2, d));
  EXPECT_TRUE(r.ready(0));  // release is per instance
  EXPECT_EQ(r.counters().arrivals, 2u);
  EXPECT_EQ(r.counters().replaced, 0u);
}

TEST_F(datagram_case, a_second_datagram_on_a_ready_instance_replaces_it_and_is_counted) {
  datagram_receiver r(rm, 1, 64);
  datagram_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed()), status::ok);
  ASSERT_EQ(s.send(0, "first", 5), status::ok);
  ASSERT_EQ(s.send(0, "second", 6), status::ok);
  datagram d;
  ASSERT_TRUE(rm.wait_until([&] { return r.counters().arrivals == 2; }, 5'000'000'000ull));
  ASSERT_TRUE(r.receive(0, d));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data), d.length), "second");
  EXPECT_EQ(r.counters().replaced, 1u);
}

TEST_F(datagram_case, out_of_range_sends_are_refused_before_anything_is_sent) {
  datagram_receiver r(rm, 2, 64);
  datagram_sender s;
  ASSERT_EQ(s.open(sm, r.make_seed()), status::ok);
  char big[65] = {};
  EXPECT_EQ(s.send(2, big, 1), status::invalid_argument);
  EXPECT_EQ(s.send(0, big, 65), status::invalid_argument);
  EXPECT_EQ(j[1].arrivals().packets, 0u);
}

TEST_F(datagram_case, a_reply_ticket_travels_with_the_datagram_and_works_back) {
  datagram_receiver server(rm, 2, 256);
  datagram_receiver client(sm, 3, 256);  // where the reply goes: its instance 2
  datagram_sender to_server;
  ASSERT_EQ(to_server.open(sm, server.make_seed()), status::ok);
  const hw::ticket reply = client.reply_ticket(2);
  ASSERT_EQ(to_server.send(1, "ping", 4, &reply), status::ok);
  datagram d;
  ASSERT_TRUE(rm.wait_until([&] { return server.receive(1, d); }, 5'000'000'000ull));
  ASSERT_TRUE(d.has_reply);
  // The server answers on the ticket it was given (checked as a seed is).
  datagram_sender answer;
  ASSERT_EQ(answer.open_reply(rm, d.reply), status::ok);
  EXPECT_EQ(answer.send(1, "pong", 4), status::invalid_argument);  // one instance only
  ASSERT_EQ(answer.send(0, "pong", 4), status::ok);
  datagram a;
  ASSERT_TRUE(sm.wait_until([&] { return client.receive(2, a); }, 5'000'000'000ull));
  EXPECT_FALSE(client.ready(0));
  // A forged reply ticket is refused like a forged seed.
  hw::ticket forged = d.reply;
  forged.protection_key ^= 4;
  datagram_sender liar;
  EXPECT_EQ(liar.open_reply(rm, forged), status::rejected);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.data), a.length), "pong");
  EXPECT_EQ(a.source, 1u);
}

// A sender with the right ticket that lies in its metadata (raw h_send_msg):
// offset or length outside the instance, unknown flags, a reply flag with
// no ticket. Counted, nothing made ready.
TEST_F(datagram_case, lying_metadata_is_counted_and_makes_nothing_ready) {
  datagram_receiver r(rm, 2, 64);
  const seed sd = r.make_seed();
  struct lie {
    uint32_t offset, length, flags, meta_bytes;
  };
  const lie lies[] = {{60, 8, 0, 12},
                      {0, 65, 0, 12},
                      {0xFFFFFFFFu, 2, 0, 12},
                      {0, 4, 2, 12},
                      {0, 4, datagram_metadata::flag_reply, 12},
                      {0, 4, 0, 8}};
  for (const lie& l : lies) {
    std::byte meta[hw::user_metadata_bytes] = {};
    std::memcpy(meta, &l.offset, 4);
    std::memcpy(meta + 4, &l.length, 4);
    std::memcpy(meta + 8, &l.flags, 4);
    hw::ticket t = sd.target;
    t.metadata_index = 1;
    t.offset = 64;
    t.range = 64;
    const char data[4] = {};
    const iovec piece{const_cast<char*>(data), 4};
    hw::message m;
    m.gather = &piece;
    m.gather_count = 1;
    m.metadata = meta;
    m.metadata_length = l.meta_bytes;
    hw::send_handle h;
    ASSERT_EQ(j[0].terminus().send(t, m, h), status::ok);
    ASSERT_EQ(sm.wait_sent(h), status::ok);
  }
  const size_t n = sizeof lies / sizeof lies[0];
  ASSERT_TRUE(rm.wait_until([&] { return r.counters().malformed == n; }, 5'000'000'000ull));
  EXPECT_FALSE(r.ready(1));
  EXPECT_FALSE(r.ready(0));
  EXPECT_EQ(r.counters().arrivals, 0u);
}

}  // namespace
}  // namespace hpam::test
