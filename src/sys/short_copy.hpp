// Byte copies sized for the small-message path: up to 32 bytes (an MPI
// match header, a few words of payload) with at most four loads and four
// stores inline, longer ones through memcpy (short_copy); up to 96 bytes (a
// message a Hamlyn notification entry carries) in 32-byte moves
// (copy_up_to_96). A call into the C library's memcpy costs more than the
// copy itself at these sizes.
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

// The same for 32 <= n <= 64 in 32-byte moves (always inline: inside the
// notification append, a call here cost 11 instructions per message). The
// moves go through 16-byte vector words: through byte arrays, GCC also
// stored the words to the arrays on the stack (3 dead stores a copy).
[[gnu::always_inline]] inline void copy_two_32(std::byte* dst, const std::byte* src,
                                               size_t n) noexcept {
  using word16 = unsigned char __attribute__((vector_size(16), aligned(1)));
  word16 w[4];
  std::memcpy(&w[0], src, 16);
  std::memcpy(&w[1], src + 16, 16);
  std::memcpy(&w[2], src + n - 32, 16);
  std::memcpy(&w[3], src + n - 16, 16);
  std::memcpy(dst, &w[0], 16);
  std::memcpy(dst + 16, &w[1], 16);
  std::memcpy(dst + n - 32, &w[2], 16);
  std::memcpy(dst + n - 16, &w[3], 16);
}
}  // namespace detail

// memcpy(dst, src, n) for non-overlapping ranges; src may be null when n is 0.
// The tests go by halves, so that 8..16 bytes (an MPI match header, a
// small payload) are found by two compares, not three (n > 32 first).
inline void short_copy(std::byte* dst, const void* from, size_t n) noexcept {
  const auto* src = static_cast<const std::byte*>(from);
  if (n > 16) {
    if (n > 32) {
      std::memcpy(dst, src, n);
    } else {  // 17..32: the first 16 bytes and the last 16
      detail::copy_two<uint64_t>(dst, src, 16);
      detail::copy_two<uint64_t>(dst + n - 16, src + n - 16, 16);
    }
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

// memcpy(dst, src, n) for n <= 96 and non-overlapping ranges, always inline
// (a call would cost more than the copy); src may be null when n is 0.
[[gnu::always_inline]] inline void copy_up_to_96(std::byte* dst, const void* from,
                                                 size_t n) noexcept {
  const auto* src = static_cast<const std::byte*>(from);
  // Each branch reads only [src, src + n); inlined into a caller whose
  // source is a small object, GCC would still warn about the longer
  // branches it cannot rule out, so it is not shown where src points.
  asm("" : "+r"(src));
  if (n > 64) {  // 65..96: the first 64 bytes and the last 32
    detail::copy_two_32(dst, src, 64);
    detail::copy_two_32(dst + n - 32, src + n - 32, 32);
  } else if (n >= 32) {
    detail::copy_two_32(dst, src, n);
  } else {
    short_copy(dst, src, n);
  }
}

}  // namespace hpam::sys
