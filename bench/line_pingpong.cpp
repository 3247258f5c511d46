// The hardware floor under every shared-memory round trip: two forked
// processes pass a counter back and forth through two cache lines of a
// shared mapping (process 0 writes "ping" i, process 1 answers "pong" i).
// One round trip moves each line between the cores once, so this is the
// least a request/reply over shared memory can cost on this machine; a
// protocol that touches k dependent lines per direction costs about k times
// half of it plus its instructions.
//
//   line_pingpong [--quick] [--reps R]
// CSV: metric,value (rtt_ns: median over the repetitions; rtt_best_ns: the
// fastest of 64 short bursts of 2000 round trips, the floor when both
// processes had a core to themselves on a loaded machine)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sys/clock.hpp"

namespace {

struct alignas(64) line {
  std::atomic<uint64_t> value;  // the counter passed across
  char pad[64 - sizeof(std::atomic<uint64_t>)];
};

struct shared_area {
  line ping;  // written by process 0
  line pong;  // written by process 1
  double rtt_ns[64];
  double burst_ns[64];
};
static_assert(sizeof(line) == 64, "one cache line each");

void serve(shared_area* a, uint64_t total) {
  for (uint64_t i = 1; i <= total; ++i) {
    while (a->ping.value.load(std::memory_order_acquire) != i) {
    }
    a->pong.value.store(i, std::memory_order_release);
  }
}

constexpr int bursts = 64;
constexpr uint64_t burst_iters = 2000;

void measure(shared_area* a, int reps, uint64_t iters) {
  hpam::sys::clock clk;
  uint64_t next = 1;
  for (int r = 0; r < bursts; ++r) {
    const uint64_t t0 = clk.now_ns();
    for (uint64_t i = 0; i < burst_iters; ++i, ++next) {
      a->ping.value.store(next, std::memory_order_release);
      while (a->pong.value.load(std::memory_order_acquire) != next) {
      }
    }
    a->burst_ns[r] = static_cast<double>(clk.now_ns() - t0) / static_cast<double>(burst_iters);
  }
  for (int r = 0; r < reps; ++r) {
    const uint64_t t0 = clk.now_ns();
    for (uint64_t i = 0; i < iters; ++i, ++next) {
      a->ping.value.store(next, std::memory_order_release);
      while (a->pong.value.load(std::memory_order_acquire) != next) {
      }
    }
    a->rtt_ns[r] = static_cast<double>(clk.now_ns() - t0) / static_cast<double>(iters);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  uint64_t iters = 200000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") { reps = 3; iters = 50000; }
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::min(64, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr, "usage: line_pingpong [--quick] [--reps R]\n");
      return 2;
    }
  }
  void* m = mmap(nullptr, sizeof(shared_area), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  auto* a = new (m) shared_area{};
  const pid_t kid = fork();
  if (kid < 0) return 1;
  if (kid == 0) {
    alarm(120);
    serve(a, iters * static_cast<uint64_t>(reps) + bursts * burst_iters);
    _exit(0);
  }
  alarm(120);
  measure(a, reps, iters);
  int st;
  waitpid(kid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  std::vector<double> v(a->rtt_ns, a->rtt_ns + reps);
  std::sort(v.begin(), v.end());
  std::printf("metric,value\nrtt_ns,%.1f\n", v[v.size() / 2]);
  std::printf("rtt_best_ns,%.1f\n", *std::min_element(a->burst_ns, a->burst_ns + bursts));
  return 0;
}
