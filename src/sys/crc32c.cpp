#include "sys/crc32c.hpp"

#include <cpuid.h>
#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace hpam::sys {
namespace {

constexpr uint32_t castagnoli_reflected = 0x82F63B78u;

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ castagnoli_reflected : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto table = make_table();

bool cpu_has_sse42() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}

// One stream of crc32 instructions is bound by their 3-cycle latency; three
// independent streams over three equal blocks keep the unit busy, and the
// CRC is linear, so the blocks' CRCs combine exactly:
//   f(s, A|B) = shift_len(B)(f(s, A)) ^ f(0, B)
// where f is the raw (uninverted) CRC update and shift_n(s) = f(s, n zeros).
// shift_n is linear in s, so four byte tables evaluate it. Rounds of three
// 512-byte blocks take the bulk, then rounds of three 128- and 32-byte
// blocks, so that packets of a few hundred bytes to 2 KiB run three streams
// too (a 1100-byte packet: 118 -> 72 ns; 560 bytes: 52 -> 32 ns).
uint32_t raw_update_portable(uint32_t c, const uint8_t* p, size_t len) {
  while (len--) c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c;
}

// The tables are made at load: shift_n is linear, so only its 32 one-bit
// states are run through n zeros and every other entry is the XOR of its
// lowest bit's entry and the entry without that bit (32 CRC runs a table
// instead of 1024: the load's 5.5 M instructions were in every process).
template <size_t Stride>
struct shift_tables {
  uint32_t t[4][256];
  shift_tables() {
    static const uint8_t zeros[Stride] = {};
    for (int j = 0; j < 4; ++j) {
      t[j][0] = 0;
      for (uint32_t b = 1; b < 256; ++b) {
        const uint32_t low = b & (~b + 1);
        t[j][b] =
            b == low ? raw_update_portable(b << (8 * j), zeros, Stride) : t[j][b ^ low] ^ t[j][low];
      }
    }
  }
  uint32_t shift(uint32_t s) const {
    return t[0][s & 0xFF] ^ t[1][(s >> 8) & 0xFF] ^ t[2][(s >> 16) & 0xFF] ^ t[3][s >> 24];
  }
};
const shift_tables<512> shifts_512;
const shift_tables<128> shifts_128;
const shift_tables<32> shifts_32;

// Rounds of three Stride-byte streams while at least three blocks are left.
template <size_t Stride>
__attribute__((target("sse4.2"), always_inline)) inline uint64_t three_streams(
    uint64_t c, const uint8_t*& p, size_t& len, const shift_tables<Stride>& shifts) {
  while (len >= 3 * Stride) {
    uint64_t a = c, b = 0, d = 0;
    for (size_t i = 0; i < Stride / 8; ++i) {
      uint64_t wa, wb, wd;
      std::memcpy(&wa, p + 8 * i, 8);
      std::memcpy(&wb, p + Stride + 8 * i, 8);
      std::memcpy(&wd, p + 2 * Stride + 8 * i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      d = _mm_crc32_u64(d, wd);
    }
    c = shifts.shift(shifts.shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
        static_cast<uint32_t>(d);
    p += 3 * Stride;
    len -= 3 * Stride;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint64_t raw_update_hw(uint64_t c, const uint8_t*& p, size_t n8) {
  for (size_t i = 0; i < n8; ++i) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const uint8_t* p, size_t len, uint32_t crc) {
  uint64_t c = ~crc;
  c = three_streams(c, p, len, shifts_512);
  c = three_streams(c, p, len, shifts_128);
  c = three_streams(c, p, len, shifts_32);
  c = raw_update_hw(c, p, len / 8);
  len %= 8;
  uint32_t c32 = static_cast<uint32_t>(c);
  // The last 0-7 bytes in at most three steps (a packet's CRC covers
  // length - 4 bytes, so there is nearly always a tail).
  if (len & 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    c32 = _mm_crc32_u32(c32, w);
    p += 4;
  }
  if (len & 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    c32 = _mm_crc32_u16(c32, w);
    p += 2;
  }
  if (len & 1) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}

}  // namespace

uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc) noexcept {
  auto p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (len--) c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

const bool detail::crc32c_hw = cpu_has_sse42();  // crc32c() and crc32c_short() (the header)

uint32_t crc32c(const void* data, size_t len, uint32_t crc) noexcept {
  if (detail::crc32c_hw) return crc32c_hw(static_cast<const uint8_t*>(data), len, crc);
  return crc32c_portable(data, len, crc);
}

bool crc32c_uses_hardware() noexcept {
  return detail::crc32c_hw;
}

}  // namespace hpam::sys
