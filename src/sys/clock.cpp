#include "sys/clock.hpp"

#include <cpuid.h>
#include <time.h>

#include <fstream>
#include <string>

namespace hpam::sys {
namespace {

// The TSC is usable as a clock only when the CPU says it is invariant.
bool tsc_is_invariant() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000007, &a, &b, &c, &d)) return false;
  if (d & (1u << 8)) return true;
  // Hypervisors often hide the bit but export constant_tsc + nonstop_tsc.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
  }
  return false;
}

// ns-per-tick in 32.32 fixed point, measured against CLOCK_MONOTONIC over ~2 ms.
uint64_t calibrate_tsc() {
  const uint64_t t0 = clock::monotonic_ns();
  const uint64_t c0 = __builtin_ia32_rdtsc();
  uint64_t t1;
  do { t1 = clock::monotonic_ns(); } while (t1 - t0 < 2'000'000);
  const uint64_t c1 = __builtin_ia32_rdtsc();
  if (c1 <= c0) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(t1 - t0) << 32) / (c1 - c0));
}

struct tsc_calibration {
  bool usable = false;
  uint64_t mult = 0;
  tsc_calibration() {
    if (!tsc_is_invariant()) return;
    mult = calibrate_tsc();
    usable = mult != 0;
  }
};

const tsc_calibration& calibration() {
  static const tsc_calibration c;  // once per process, at first clock construction
  return c;
}

}  // namespace

clock::clock() noexcept : use_tsc_(calibration().usable), mult_(calibration().mult) {}

uint64_t clock::monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace hpam::sys
