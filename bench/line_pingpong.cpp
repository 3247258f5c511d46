// The hardware floor under every shared-memory round trip: two forked
// processes, each pinned to a CPU of its own, pass a counter back and forth
// through two cache lines of a shared mapping (process 0 writes "ping" i,
// process 1 answers "pong" i). One round trip moves each line between the
// cores once, so this is the least a request/reply over shared memory can
// cost on this machine; a protocol that touches k dependent lines per
// direction costs about k times half of it plus its instructions. Why the
// pinning and the short bursts: bench/line_floor.hpp.
//
//   line_pingpong [--quick | --probe] [--bursts N]
// --probe: 50 bursts, for sampling the floor between the steps of bench/run.
// CSV: metric,value: rtt_ns (median of the bursts of 1000 round trips),
// rtt_best_ns (the fastest burst), rtt_p10_ns and rtt_p90_ns (the spread),
// bursts, pinned (1 when each process had a CPU of its own).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "line_floor.hpp"

namespace {

constexpr int max_bursts = 10000;
constexpr uint64_t burst_iters = 1000;

struct shared_area {
  hpam_bench::line_pair lines;
  int pinned[2];
  double burst_ns[max_bursts];
};

}  // namespace

int main(int argc, char** argv) {
  int bursts = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      bursts = 200;
    else if (a == "--probe")
      bursts = 50;
    else if (a == "--bursts" && i + 1 < argc)
      bursts = std::max(1, std::min(max_bursts, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr, "usage: line_pingpong [--quick | --probe] [--bursts N]\n");
      return 2;
    }
  }
  void* m =
      mmap(nullptr, sizeof(shared_area), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 1;
  auto* a = new (m) shared_area{};
  const uint64_t total = burst_iters * static_cast<uint64_t>(bursts + 1);  // + one burst of warm-up
  const pid_t kid = fork();
  if (kid < 0) return 1;
  if (kid == 0) {
    alarm(300);
    a->pinned[1] = hpam_bench::pin_to_cpu(1) >= 0;
    uint64_t next = 0;
    hpam_bench::line_serve(&a->lines, next, total);
    _exit(0);
  }
  alarm(300);
  a->pinned[0] = hpam_bench::pin_to_cpu(0) >= 0;
  hpam::sys::clock clk;
  uint64_t next = 0;
  (void)hpam_bench::line_burst(&a->lines, next, burst_iters, clk);  // warm-up: the child starts
  for (int b = 0; b < bursts; ++b)
    a->burst_ns[b] = hpam_bench::line_burst(&a->lines, next, burst_iters, clk);
  int st;
  waitpid(kid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
  const std::vector<double> v(a->burst_ns, a->burst_ns + bursts);
  using hpam_bench::quantile;
  std::printf("metric,value\nrtt_ns,%.1f\nrtt_best_ns,%.1f\nrtt_p10_ns,%.1f\nrtt_p90_ns,%.1f\n",
              quantile(v, 0.5), quantile(v, 0), quantile(v, 0.1), quantile(v, 0.9));
  std::printf("bursts,%d\npinned,%d\n", bursts, a->pinned[0] && a->pinned[1]);
  return 0;
}
