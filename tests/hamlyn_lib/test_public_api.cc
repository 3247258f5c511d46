// The installed C++ interface (hpam_hamlyn.hpp) alone, across two forked
// processes: seeds exchanged through a pipe, then each protocol, and a
// forged seed refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "../common/test_util.hpp"
#include "hpam_hamlyn.hpp"

namespace hpam::test {
namespace {

namespace hm = hpam::hamlyn;

struct seeds {
  hm::seed datagrams, stream, tags;
};

hm::manager_config config(const std::string& job, int me) {
  hm::manager_config c;
  c.job = job;
  c.nprocs = 2;
  c.my_proc = me;
  c.buffer_bytes = 4u << 20;
  return c;
}

// Process 1: the receiving end points; it answers the datagram on its reply ticket.
int receiving_side(const std::string& job, int up) {
  hm::hamlyn_manager m(config(job, 1));
  hm::datagram_receiver dgrams(m, 4, 1024);
  hm::stream_receiver in(m);
  hm::tagged_write_receiver tags(m, 4096);
  const seeds s{dgrams.make_seed(), in.make_seed(), tags.make_seed()};
  if (write(up, &s, sizeof s) != sizeof s) return 2;
  hm::datagram d;
  if (!dgrams.receive_block(3, d, 20'000'000'000ull)) return 9;
  if (d.length != 5 || std::memcmp(d.data, "hello", 5) != 0 || !d.has_reply) return 3;
  hm::datagram_sender back;
  if (back.open_reply(m, d.reply) != hm::status::ok || back.send(0, "world", 5) != hm::status::ok)
    return 4;
  dgrams.release(3);
  std::string text;
  hm::stream_record r;
  while (text.size() < 26) {
    if (!in.receive_block(r, 20'000'000'000ull)) return 5;
    text.append(static_cast<const char*>(r.data), r.length);
    if (in.release(r.id) != hm::status::ok) return 6;
  }
  if (text != "abcdefghijklmnopqrstuvwxyz") return 7;
  uint64_t tag = 0;
  if (!tags.get_specific_tag_block(42, 20'000'000'000ull) || !tags.get_tag_block(tag, 1'000'000))
    return 10;
  if (tags.get_tag_block(tag, 2'000'000)) return 11;  // nothing more: times out
  if (tag != 7 || std::memcmp(static_cast<char*>(tags.buffer()) + 100, "tagged", 6) != 0) return 8;
  return 0;
}

TEST(hamlyn_public_api, every_protocol_between_two_processes) {
  const std::string job = unique_job("hpub");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork_child([&] { return receiving_side(job, fds[1]); });
  hm::hamlyn_manager m(config(job, 0));
  seeds s;
  ASSERT_EQ(read(fds[0], &s, sizeof s), static_cast<ssize_t>(sizeof s));
  hm::datagram_receiver replies(m, 1, 64);
  hm::datagram_sender dgram;
  ASSERT_EQ(dgram.open(m, s.datagrams), hm::status::ok);
  const hm::ticket reply = replies.reply_ticket(0);
  ASSERT_EQ(dgram.send(3, "hello", 5, &reply), hm::status::ok);
  hm::datagram d;
  ASSERT_TRUE(m.wait_until([&] { return replies.receive(0, d); }, 20'000'000'000ull));
  EXPECT_TRUE(replies.receive_block(0, d, 0));  // still ready: not released
  replies.release(0);
  EXPECT_FALSE(replies.receive_block(0, d, 2'000'000));  // released, nothing more: times out
  EXPECT_EQ(std::string(static_cast<const char*>(d.data), d.length), "world");
  hm::stream_sender out;
  ASSERT_EQ(out.open(m, s.stream), hm::status::ok);
  ASSERT_EQ(out.send("abcdefghijklm", 13), hm::status::ok);  // coalesced ...
  ASSERT_EQ(out.send("nopqrstuvwxyz", 13), hm::status::ok);
  ASSERT_EQ(out.flush(), hm::status::ok);  // ... and forced out
  hm::tagged_write_sender w;
  ASSERT_EQ(w.open(m, s.tags), hm::status::ok);
  ASSERT_EQ(w.send("tagged", 6, 100, 7), hm::status::ok);
  ASSERT_EQ(w.send(nullptr, 0, 0, 42), hm::status::ok);
  hm::seed forged = s.tags;
  forged.bytes[16 + 16] ^= 1;  // a bit of the ticket's protection key
  hm::tagged_write_sender liar;
  EXPECT_EQ(liar.open(m, forged), hm::status::rejected);
  EXPECT_EQ(liar.send("x", 1, 0, 1), hm::status::invalid_argument);
  EXPECT_EQ(reap(child), 0);
  close(fds[0]);
  close(fds[1]);
}

TEST(hamlyn_public_api, a_bad_configuration_throws) {
  hm::manager_config c;
  EXPECT_THROW(hm::hamlyn_manager{c}, std::invalid_argument);  // no job id
  c.job = unique_job("hpub");
  c.nprocs = 1;
  c.my_proc = 1;
  EXPECT_THROW(hm::hamlyn_manager{c}, std::invalid_argument);
}

}  // namespace
}  // namespace hpam::test
