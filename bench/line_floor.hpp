// The cache-line floor shared by bench/line_pingpong and bench/am_bench: two
// processes pass a counter back and forth through two cache lines of a
// shared mapping, and each process is pinned to a CPU of its own.
//
// Why pinned, why short bursts, why interleaved (measured on the 2-vCPU KVM
// guest these benchmarks run on):
// * Unpinned, the scheduler now and then runs both spinning processes on one
//   CPU (or preempts one for another job): a burst of 2000 round trips then
//   averages 2-6 µs instead of 0.12 µs. Pinned, the worst burst on an idle
//   machine stayed under 0.2 µs.
// * A long repetition (50,000 round trips) is a mean: one preemption inside
//   it inflates the whole figure, so a median of three of them still moved
//   with the load. The median of many short bursts does not.
// * The floor itself moves with where the host runs the two vCPUs: one
//   minute of samples showed three levels, about 53 ns (sibling hardware
//   threads, presumably), 110-145 ns (two cores sharing an L3) and 420-520
//   ns (cores on different L3s), each lasting from a fraction of a second
//   to minutes (three default bench/runs probed it at 84 steps each: 40,
//   48 and 27 times at 420-520 ns, 43, 28 and 53 at 110-145 ns, the rest
//   near 55 ns; the level changed every few steps). A
//   floor measured at one moment is no denominator for a round trip
//   measured at another: am_bench alternates its bursts with line bursts
//   and divides pair by pair.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "sys/clock.hpp"

namespace hpam_bench {

struct alignas(64) line {
  std::atomic<uint64_t> value;  // the counter passed across
  char pad[64 - sizeof(std::atomic<uint64_t>)];
};
static_assert(sizeof(line) == 64, "one cache line each");

struct line_pair {
  line ping;  // written by the measuring process
  line pong;  // written by the serving process
};

// Pins the calling process to the `which`-th CPU (0 or 1) of the set it may
// run on, so that the two processes of a ping-pong never share a CPU.
// Returns the CPU, or -1 when the set has fewer than two CPUs (left alone).
inline int pin_to_cpu(int which) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ != which) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
  }
  return -1;
}

// The measuring side: `iters` round trips, counter values next+1 ...;
// returns ns per round trip.
inline double line_burst(line_pair* p, uint64_t& next, uint64_t iters,
                         const hpam::sys::clock& clk) {
  const uint64_t t0 = clk.now_ns();
  for (uint64_t i = 0; i < iters; ++i) {
    ++next;
    p->ping.value.store(next, std::memory_order_release);
    while (p->pong.value.load(std::memory_order_acquire) != next) {
    }
  }
  return static_cast<double>(clk.now_ns() - t0) / static_cast<double>(iters);
}

// The serving side: answers `iters` pings, counter values next+1 ...
inline void line_serve(line_pair* p, uint64_t& next, uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    ++next;
    while (p->ping.value.load(std::memory_order_acquire) != next) {
    }
    p->pong.value.store(next, std::memory_order_release);
  }
}

// The q-quantile (0 = smallest, 0.5 = median) of v.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace hpam_bench
