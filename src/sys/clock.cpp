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

// A (TSC, CLOCK_MONOTONIC) pair read back to back: the attempt whose two
// TSC reads are closest is kept, so a preemption between the reads (which
// would skew the scale on a loaded machine) cannot spoil it.
struct clock_pair {
  uint64_t tsc;
  uint64_t ns;
};

clock_pair tight_pair() {
  clock_pair best{0, 0};
  uint64_t best_gap = ~0ull;
  for (int i = 0; i < 16; ++i) {
    const uint64_t a = __builtin_ia32_rdtsc();
    const uint64_t ns = clock::monotonic_ns();
    const uint64_t b = __builtin_ia32_rdtsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

// ns-per-tick in 32.32 fixed point, measured against CLOCK_MONOTONIC over ~5 ms.
uint64_t calibrate_tsc() {
  const clock_pair p0 = tight_pair();
  while (clock::monotonic_ns() - p0.ns < 5'000'000) {
  }
  const clock_pair p1 = tight_pair();
  if (p1.tsc <= p0.tsc) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(p1.ns - p0.ns) << 32) /
                               (p1.tsc - p0.tsc));
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
