// CRC32C (Castagnoli), the checksum every packet carries (the FDDI trailer's
// role in HPAM 5.2). Uses the SSE4.2 crc32 instruction when the CPU has it,
// a table otherwise; both give identical results (tested).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hpam::sys {

// CRC32C of `len` bytes, continuing from `crc` (start with 0).
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0) noexcept;

// The portable table version, exposed so tests can compare the two.
uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc = 0) noexcept;

bool crc32c_uses_hardware() noexcept;

}  // namespace hpam::sys
