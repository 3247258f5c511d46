// CRC32C: published check values, continuation, and the SSE4.2 version
// against the table version on random buffers of every length and offset.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "sys/crc32c.hpp"

namespace hpam::sys {
namespace {

TEST(crc32c, known_vectors) {
  const char* check = "123456789";
  EXPECT_EQ(crc32c(check, 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(check, 9), 0xE3069283u);
  EXPECT_EQ(crc32c(check, 0), 0u);
  // RFC 3720 (iSCSI) B.4 test patterns.
  std::vector<uint8_t> buf(32, 0);
  EXPECT_EQ(crc32c(buf.data(), 32), 0x8A9136AAu);
  std::fill(buf.begin(), buf.end(), 0xff);
  EXPECT_EQ(crc32c(buf.data(), 32), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(crc32c(buf.data(), 32), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(crc32c(buf.data(), 32), 0x113FDB5Cu);
}

TEST(crc32c, continues_across_pieces) {
  const char* check = "123456789";
  for (size_t cut = 0; cut <= 9; ++cut) {
    EXPECT_EQ(crc32c(check + cut, 9 - cut, crc32c(check, cut)), 0xE3069283u) << cut;
    EXPECT_EQ(crc32c_portable(check + cut, 9 - cut, crc32c_portable(check, cut)), 0xE3069283u);
  }
}

TEST(crc32c, hardware_equals_portable) {
  std::mt19937_64 rng(1234);
  std::vector<uint8_t> buf(300 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 16; ++offset)
    for (size_t len = 0; len <= 300; ++len) {
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32c(buf.data() + offset, len), crc32c_portable(buf.data() + offset, len))
          << "offset " << offset << " len " << len;
      ASSERT_EQ(crc32c(buf.data() + offset, len, seed),
                crc32c_portable(buf.data() + offset, len, seed));
    }
  if (!crc32c_uses_hardware()) GTEST_SKIP() << "no SSE4.2: only the table version ran";
}

// Every length through the rounds of three 32-, 128- and 512-byte streams
// and the tails between them (3 * 512 = 1536 bytes and beyond), then a few
// large packets.
TEST(crc32c, hardware_equals_portable_through_every_round) {
  std::mt19937_64 rng(5678);
  std::vector<uint8_t> buf(40000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = 0; len <= 2200; ++len) {
    const size_t offset = len % 8;
    const uint32_t seed = static_cast<uint32_t>(rng());
    ASSERT_EQ(crc32c(buf.data() + offset, len, seed),
              crc32c_portable(buf.data() + offset, len, seed))
        << "offset " << offset << " len " << len;
  }
  for (size_t len : {3071, 3072, 3073, 4605, 8192, 32768 + 13, 39990})
    ASSERT_EQ(crc32c(buf.data() + 1, len), crc32c_portable(buf.data() + 1, len)) << "len " << len;
}

TEST(crc32c, short_equals_portable_at_every_length_and_alignment) {
  std::vector<uint8_t> buf(160);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 17);
  for (size_t len = 0; len <= 150; ++len)
    for (size_t align = 0; align < 8; ++align)
      ASSERT_EQ(crc32c_short(buf.data() + align, len), crc32c_portable(buf.data() + align, len))
          << "len " << len << " align " << align;
}

TEST(crc32c, every_single_bit_flip_changes_it) {
  std::vector<uint8_t> buf(512);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 7);
  const uint32_t good = crc32c(buf.data(), buf.size());
  for (size_t bit = 0; bit < buf.size() * 8; ++bit) {
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_NE(crc32c(buf.data(), buf.size()), good) << bit;
    buf[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

// Long buffers take the three-stream path (rounds of 3 x 512 bytes, then a
// tail): lengths around every round boundary must match the table version.
TEST(crc32c, three_stream_path_equals_portable) {
  std::mt19937_64 rng(99);
  std::vector<uint8_t> buf(70016);  // room for the longest length at the largest offset
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len :
       {1535u, 1536u, 1537u, 1543u, 3071u, 3072u, 3080u, 4607u, 8128u, 8192u, 65536u, 69999u})
    for (size_t offset : {0u, 1u, 7u}) {
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(crc32c(buf.data() + offset, len, seed),
                crc32c_portable(buf.data() + offset, len, seed))
          << "offset " << offset << " len " << len;
    }
}

}  // namespace
}  // namespace hpam::sys
