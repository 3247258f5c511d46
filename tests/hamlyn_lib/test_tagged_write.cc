// Tagged remote write: one fast-mode packet writes the data at the offset
// and queues the tag; get_tag takes any, get_specific_tag that one, in any
// order; across forked processes too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "hamlyn_lib/tagged_write.hpp"
#include "lib_fixture.hpp"

namespace hpam::test {
namespace {

using namespace hamlyn_lib;
namespace hw = nic::hamlyn;

using tagged_case = two_managers;

TEST_F(tagged_case, writes_land_at_their_offsets_and_tags_come_in_any_order_asked) {
  tagged_write_receiver r(rm, 1 << 16);
  tagged_write_sender w;
  ASSERT_EQ(w.open(sm, r.make_seed()), status::ok);
  const uint32_t sizes[] = {0, 1, 16, 96, 97, 1000, 4032};
  uint64_t offset = 0;
  std::vector<std::vector<std::byte>> sent;
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    sent.push_back(bytes_of(sizes[i], static_cast<uint8_t>(i + 1)));
    offsets.push_back(offset);
    ASSERT_EQ(w.send(sent[i].data(), sizes[i], offset, 100 + i), status::ok);
    offset += sizes[i] + 8;
  }
  tagged_arrival t;
  ASSERT_TRUE(r.get_specific_tag(103, &t));  // from the middle
  EXPECT_EQ(t.length, 96u);
  EXPECT_EQ(t.source, 0u);
  EXPECT_FALSE(r.get_specific_tag(103));                 // taken once only
  EXPECT_FALSE(r.get_specific_tag(7));                   // never sent
  EXPECT_FALSE(r.get_specific_tag_block(7, 2'000'000));  // waits 2 ms for it, in vain
  ASSERT_TRUE(r.get_specific_tag(106, &t));
  EXPECT_EQ(t.length, 4032u);
  std::vector<uint64_t> rest;
  uint64_t tag;
  while (r.get_tag(tag)) rest.push_back(tag);
  EXPECT_EQ(rest, (std::vector<uint64_t>{100, 101, 102, 104, 105}));  // the others, in order
  for (size_t i = 0; i < std::size(sizes); ++i)
    EXPECT_TRUE(sizes[i] == 0 ||
                std::memcmp(r.buffer() + offsets[i], sent[i].data(), sizes[i]) == 0)
        << i;  // (an empty vector's data() may be null)
  EXPECT_EQ(r.counters().arrivals, std::size(sizes));
}

TEST_F(tagged_case, a_write_that_is_not_one_packet_or_outside_the_buffer_is_refused) {
  tagged_write_receiver r(rm, 8192);
  tagged_write_sender w;
  ASSERT_EQ(w.open(sm, r.make_seed()), status::ok);
  std::vector<std::byte> big(4033);
  EXPECT_NE(w.send(big.data(), 4033, 0, 1), status::ok);   // two packets: not fast mode
  EXPECT_NE(w.send(big.data(), 16, 8190, 2), status::ok);  // past the buffer
  uint64_t tag;
  EXPECT_FALSE(r.get_tag(tag));
  EXPECT_EQ(j[1].arrivals().packets, 0u);
}

TEST_F(tagged_case, a_forged_ticket_is_refused_by_the_card_and_queues_no_tag) {
  tagged_write_receiver r(rm, 4096);
  seed s = r.make_seed();
  tagged_write_sender honest;
  ASSERT_EQ(honest.open(sm, s), status::ok);
  s.target.protection_key ^= 0x100;
  tagged_write_sender forger;
  EXPECT_EQ(forger.open(sm, s), status::rejected);
  EXPECT_EQ(sm.counters().seeds_refused, 1u);
  // The forger skips the seed check and presents the ticket itself: the card refuses it.
  hw::ticket t = s.target;
  t.metadata_index = hw::fast_index;
  hw::send_handle h;
  EXPECT_EQ(j[0].terminus().send_fast(t, 0, nullptr, 0, 66, h), status::rejected);
  EXPECT_EQ(j[1].arrivals().key_rejections, 1u);
  ASSERT_EQ(honest.send("ok", 2, 0, 65), status::ok);
  uint64_t tag;
  ASSERT_TRUE(rm.wait_until([&] { return r.get_tag(tag); }, 5'000'000'000ull));
  EXPECT_EQ(tag, 65u);
  EXPECT_FALSE(r.get_tag(tag));
}

// Across processes: the child receives, the parent writes; tags taken in
// an order of the child's choosing.
TEST(tagged_write_fork, tags_and_data_cross_processes) {
  const std::string job = unique_job("htag");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  constexpr int writes = 200;
  const pid_t child = fork_child([&] {
    hw::card_config cfg = hamlyn_config(job, 2, 1);
    cfg.notify_capacity = 256;  // fast mode has no flow control: room for every tag
    hw::card c(cfg);
    c.attach_all();
    hamlyn_manager m(c);
    tagged_write_receiver r(m, 64 * writes);
    const seed s = r.make_seed();
    if (write(fds[1], &s, sizeof s) != sizeof s) return 2;
    std::vector<bool> seen(writes);
    for (int want = writes - 1; want >= 0; want -= 2)  // the odd ones, last first
      if (!m.wait_until([&] { return r.get_specific_tag(static_cast<uint64_t>(want)); },
                        20'000'000'000ull))
        return 3;
      else
        seen[static_cast<size_t>(want)] = true;
    uint64_t tag;
    for (int i = 0; i < writes / 2; ++i) {
      if (!m.wait_until([&] { return r.get_tag(tag); }, 20'000'000'000ull)) return 4;
      if (tag >= writes || seen[tag]) return 5;
      seen[tag] = true;
    }
    for (int i = 0; i < writes; ++i) {
      const auto want = bytes_of(64, static_cast<uint8_t>(i));
      if (std::memcmp(r.buffer() + 64 * i, want.data(), 64) != 0) return 6;
    }
    return r.get_tag(tag) ? 7 : 0;
  });
  hw::card c(hamlyn_config(job, 2, 0));
  c.attach_all();
  hamlyn_manager m(c);
  seed s;
  ASSERT_EQ(read(fds[0], &s, sizeof s), static_cast<ssize_t>(sizeof s));
  tagged_write_sender w;
  ASSERT_EQ(w.open(m, s), status::ok);
  for (int i = 0; i < writes; ++i) {
    const auto data = bytes_of(64, static_cast<uint8_t>(i));
    ASSERT_EQ(w.send(data.data(), 64, 64 * static_cast<uint64_t>(i), static_cast<uint64_t>(i)),
              status::ok);
  }
  EXPECT_EQ(reap(child), 0);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace hpam::test
