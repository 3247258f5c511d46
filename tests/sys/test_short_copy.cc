// short_copy: the same bytes as memcpy for every length around its size
// classes and every alignment, and nothing written outside the target.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "sys/short_copy.hpp"

namespace hpam::sys {
namespace {

TEST(ShortCopy, SameBytesAsMemcpyAndNothingAround) {
  constexpr size_t guard = 16;
  std::vector<std::byte> src(128), dst(128 + 2 * guard);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
  for (size_t n = 0; n <= 80; ++n)
    for (size_t align = 0; align < 8; ++align) {
      std::memset(dst.data(), 0xEE, dst.size());
      short_copy(dst.data() + guard + align, src.data() + align, n);
      for (size_t i = 0; i < dst.size(); ++i) {
        const size_t at = guard + align;
        const std::byte want = i >= at && i < at + n ? src[align + i - at] : std::byte{0xEE};
        ASSERT_EQ(dst[i], want) << "n=" << n << " align=" << align << " byte " << i;
      }
    }
}

TEST(ShortCopy, ZeroBytesFromNullIsNothing) {
  std::byte b{0x5A};
  short_copy(&b, nullptr, 0);
  EXPECT_EQ(b, std::byte{0x5A});
}

}  // namespace
}  // namespace hpam::sys
