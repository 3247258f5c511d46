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
const bool have_hw = cpu_has_sse42();

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const uint8_t* p, size_t len, uint32_t crc) {
  uint64_t c = ~crc;
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

}  // namespace

uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc) noexcept {
  auto p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (len--) c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t crc32c(const void* data, size_t len, uint32_t crc) noexcept {
  if (have_hw) return crc32c_hw(static_cast<const uint8_t*>(data), len, crc);
  return crc32c_portable(data, len, crc);
}

bool crc32c_uses_hardware() noexcept { return have_hw; }

}  // namespace hpam::sys
