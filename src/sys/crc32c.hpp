// CRC32C (Castagnoli), the checksum every packet carries (the FDDI trailer's
// role in HPAM 5.2). Uses the SSE4.2 crc32 instruction when the CPU has it,
// a table otherwise; both give identical results (tested).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hpam::sys {

// CRC32C of `len` bytes, continuing from `crc` (start with 0).
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0) noexcept;

// The portable table version, exposed so tests can compare the two.
uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc = 0) noexcept;

bool crc32c_uses_hardware() noexcept;

namespace detail {
extern const bool crc32c_hw;  // the CPU has SSE4.2's crc32 (set before main)
#if defined(__x86_64__)
// One crc32 instruction step (inline assembly: no target attribute needed,
// so it inlines into code compiled for any x86-64).
inline uint64_t crc_step(uint64_t c, uint64_t w) noexcept {
  asm("crc32q %1, %0" : "+r"(c) : "rm"(w));
  return c;
}
// The 4-, 2- and 1-byte steps (the assembler takes the size from the
// source register).
template <class W>
inline uint32_t crc_step(uint32_t c, W w) noexcept {
  static_assert(sizeof(W) <= 4);
  asm("crc32 %1, %0" : "+r"(c) : "r"(w));
  return c;
}
template <class W>
inline W load(const uint8_t* p) noexcept {
  W w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
#endif
}  // namespace detail

// crc32c(data, len) for a packet of at most two cache lines (the wire CRC
// of a small message): the crc32 steps inline, unrolled, no call; longer
// data, or a CPU without SSE4.2, takes crc32c().
[[gnu::always_inline]] inline uint32_t crc32c_short(const void* data, size_t len) noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(len <= 128 && detail::crc32c_hw, 1)) {
    const auto* p = static_cast<const uint8_t*>(data);
    const uint8_t* q = p + (len & ~size_t{7});  // the end of the 8-byte words
    uint64_t c = 0xFFFFFFFFu;
    switch (len / 8) {  // word k from the end at a constant offset: one step each
      case 16:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 128));
        [[fallthrough]];
      case 15:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 120));
        [[fallthrough]];
      case 14:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 112));
        [[fallthrough]];
      case 13:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 104));
        [[fallthrough]];
      case 12:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 96));
        [[fallthrough]];
      case 11:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 88));
        [[fallthrough]];
      case 10:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 80));
        [[fallthrough]];
      case 9:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 72));
        [[fallthrough]];
      case 8:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 64));
        [[fallthrough]];
      case 7:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 56));
        [[fallthrough]];
      case 6:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 48));
        [[fallthrough]];
      case 5:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 40));
        [[fallthrough]];
      case 4:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 32));
        [[fallthrough]];
      case 3:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 24));
        [[fallthrough]];
      case 2:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 16));
        [[fallthrough]];
      case 1:
        c = detail::crc_step(c, detail::load<uint64_t>(q - 8));
        [[fallthrough]];
      default:
        break;
    }
    p = q;
    auto c32 = static_cast<uint32_t>(c);
    if (len & 4) c32 = detail::crc_step(c32, detail::load<uint32_t>(p)), p += 4;
    if (len & 2) c32 = detail::crc_step(c32, detail::load<uint16_t>(p)), p += 2;
    if (len & 1) c32 = detail::crc_step(c32, *p);
    return ~c32;
  }
#endif
  return crc32c(data, len);
}

}  // namespace hpam::sys
