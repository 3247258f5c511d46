// Byte copies sized for the small-message path: up to 32 bytes (an MPI
// match header, a few words of payload) with at most four loads and four
// stores inline, longer ones through memcpy. A call into the C library's
// memcpy costs more than the copy itself at these sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hpam::sys {

namespace detail {
// Copies n bytes, w <= n <= 2w, as two possibly overlapping w-byte moves
// (both loads before either store; src and dst do not overlap).
template <class Word>
inline void copy_two(std::byte* dst, const std::byte* src, size_t n) noexcept {
  Word head, tail;
  std::memcpy(&head, src, sizeof(Word));
  std::memcpy(&tail, src + n - sizeof(Word), sizeof(Word));
  std::memcpy(dst, &head, sizeof(Word));
  std::memcpy(dst + n - sizeof(Word), &tail, sizeof(Word));
}
}  // namespace detail

// memcpy(dst, src, n) for non-overlapping ranges; src may be null when n is 0.
inline void short_copy(std::byte* dst, const void* from, size_t n) noexcept {
  const auto* src = static_cast<const std::byte*>(from);
  if (n > 32) {
    std::memcpy(dst, src, n);
  } else if (n >= 16) {  // 16..32: the first 16 bytes and the last 16
    detail::copy_two<uint64_t>(dst, src, 16);
    detail::copy_two<uint64_t>(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    detail::copy_two<uint64_t>(dst, src, n);
  } else if (n >= 4) {
    detail::copy_two<uint32_t>(dst, src, n);
  } else if (n != 0) {  // 1..3: first, middle, last byte
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

}  // namespace hpam::sys
