// short_copy and copy_up_to_96: the same bytes as memcpy for every length around its size
// classes and every alignment, and nothing written outside the target.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "sys/short_copy.hpp"

namespace hpam::sys {
namespace {

// copy(dst, src, n) for every n up to max_n and every alignment: the
// bytes memcpy would write, and none around them.
template <class Copy>
void expect_memcpy_bytes(Copy copy, size_t max_n) {
  constexpr size_t guard = 16;
  std::vector<std::byte> src(128), dst(128 + 2 * guard);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
  for (size_t n = 0; n <= max_n; ++n)
    for (size_t align = 0; align < 8; ++align) {
      std::memset(dst.data(), 0xEE, dst.size());
      copy(dst.data() + guard + align, src.data() + align, n);
      for (size_t i = 0; i < dst.size(); ++i) {
        const size_t at = guard + align;
        const std::byte want = i >= at && i < at + n ? src[align + i - at] : std::byte{0xEE};
        ASSERT_EQ(dst[i], want) << "n=" << n << " align=" << align << " byte " << i;
      }
    }
}

TEST(short_copy, same_bytes_as_memcpy_and_nothing_around) {
  expect_memcpy_bytes([](std::byte* d, const std::byte* s, size_t n) { short_copy(d, s, n); }, 80);
}

TEST(short_copy, up_to_96_same_bytes_as_memcpy_and_nothing_around) {
  expect_memcpy_bytes([](std::byte* d, const std::byte* s, size_t n) { copy_up_to_96(d, s, n); },
                      96);
}

TEST(short_copy, zero_bytes_from_null_is_nothing) {
  std::byte b{0x5A};
  short_copy(&b, nullptr, 0);
  copy_up_to_96(&b, nullptr, 0);
  EXPECT_EQ(b, std::byte{0x5A});
}

}  // namespace
}  // namespace hpam::sys
