// A cheap monotonic clock (the paper's "interval timer register", HPAM 5.2.1).
// Reads the TSC when it is invariant (constant_tsc + nonstop_tsc), scaled to
// nanoseconds with a factor calibrated once at setup; otherwise falls back to
// CLOCK_MONOTONIC through the vDSO (no system call either way).
//
// Tests inject time: a clock built with a manual_time source returns whatever
// the test stores there, so timeout and retransmission tests are exact.
#pragma once

#include <atomic>
#include <cstdint>

namespace hpam::sys {

// Time set by hand by a test; shared by all clocks constructed over it.
struct manual_time {
  std::atomic<uint64_t> ns{0};
  void advance(uint64_t delta_ns) { ns.fetch_add(delta_ns, std::memory_order_relaxed); }
};

class clock {
 public:
  clock() noexcept;  // the real clock
  explicit clock(manual_time* manual) noexcept : manual_(manual) {}

  // Nanoseconds since an arbitrary fixed origin. Hot path: inline.
  uint64_t now_ns() const noexcept {
    if (__builtin_expect(manual_ != nullptr, 0)) return manual_->ns.load(std::memory_order_relaxed);
    if (use_tsc_)
      return static_cast<uint64_t>(
          (static_cast<unsigned __int128>(__builtin_ia32_rdtsc()) * mult_) >> shift);
    return monotonic_ns();
  }

  bool is_manual() const noexcept { return manual_ != nullptr; }
  static uint64_t monotonic_ns() noexcept;

 private:
  static constexpr unsigned shift = 32;
  manual_time* manual_ = nullptr;
  bool use_tsc_ = false;
  uint64_t mult_ = 0;  // ns per tick, fixed point with `shift` fraction bits
};

}  // namespace hpam::sys
