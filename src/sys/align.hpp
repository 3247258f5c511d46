// Rounding sizes and offsets up to an alignment, for laying out shared
// segments (card memory, message areas). Setup code only.
#pragma once

#include <cstdint>

namespace hpam::sys {

// The smallest multiple of `a` that is >= n (a > 0; any a, not only powers
// of two). n + a - 1 must not overflow: layouts here stay far below 2^63.
constexpr uint64_t align_up(uint64_t n, uint64_t a) noexcept {
  return (n + a - 1) / a * a;
}

static_assert(align_up(0, 64) == 0 && align_up(1, 64) == 64 && align_up(64, 64) == 64 &&
              align_up(65, 64) == 128 && align_up(5, 3) == 6);

}  // namespace hpam::sys
