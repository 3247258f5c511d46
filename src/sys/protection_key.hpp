// 64-bit random protection keys (HPAM 5.3: a key per parallel program;
// Hamlyn: a key per slot). Drawn from the kernel's random source, a batch
// of keys per getrandom call (protection_key.cpp).
#pragma once

#include <cstdint>

namespace hpam::sys {

using protection_key = uint64_t;

// A fresh random key, never 0 (0 is reserved to mean "no key").
// Throws std::system_error if the kernel's random source fails (setup only).
protection_key random_protection_key();

}  // namespace hpam::sys
