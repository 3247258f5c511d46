// Native active-message ping-pong against message size (no MPI): process 0
// stores s bytes into process 1 (hpam_store); process 1's bulk handler
// stores the same s bytes back (hpam_reply_store); half the round trip is the
// one-way latency of an s-byte message. Sizes quadruple from 8 B to the
// largest payload of one packet. Each figure is the median of --reps runs.
//
//   am_pingpong [--quick] [--nic medusa|hamlyn] [--reps R]
// CSV: metric,size,value (rtt_ns and one_way_ns per size)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hpam_am.h"
#include "sys/clock.hpp"

namespace {

struct result_area {  // written by process 0, read by the parent
  size_t sizes[16];
  double rtt_ns[16];
  int nsizes;
  int error;
  char message[256];
};

enum : unsigned { h_stop = 0, h_bounce = 1, h_back = 2 };
volatile uint64_t backs = 0;
volatile bool stop_serving = false;
char* sink_base = nullptr;  // same address in both processes (forked after allocation)
constexpr size_t sink_bytes = 1 << 17;

void on_bounce(hpam_token_t* t, void*, void* data, size_t len, uint64_t arg) {
  (void)hpam_reply_store(t, h_back, data, len, reinterpret_cast<uint64_t>(sink_base), arg);
}
void on_back(hpam_token_t*, void*, void*, size_t, uint64_t) {
  backs = backs + 1;
}
void on_stop(hpam_token_t*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  stop_serving = true;
}

int fail(result_area* r, const char* what) {
  r->error = 1;
  std::snprintf(r->message, sizeof r->message, "%s: %s", what, hpam_last_error());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// n round trips of s bytes; returns ns per round trip, < 0 on failure.
double round_trips(hpam_ep_t* ep, const char* src, size_t s, int n, char* remote) {
  hpam::sys::clock clk;
  backs = 0;
  const uint64_t t0 = clk.now_ns();
  for (int i = 0; i < n; ++i) {
    if (hpam_store(ep, 1, h_bounce, src, s, reinterpret_cast<uint64_t>(remote), 0) != HPAM_OK)
      return -1;
    while (backs <= static_cast<uint64_t>(i))
      if (hpam_poll(ep) < 0) return -1;
  }
  return static_cast<double>(clk.now_ns() - t0) / n;
}

int run(hpam_config_t cfg, int me, bool quick, int reps, result_area* r) {
  cfg.my_proc = me;
  hpam_ep_t* ep;
  if (hpam_ep_create(&cfg, &ep) != HPAM_OK || hpam_connect_all(ep) != HPAM_OK)
    return fail(r, "setup");
  // Both directions store into the sink: it is each process's segment.
  if (hpam_set_segment(ep, sink_base, sink_bytes) != HPAM_OK) return fail(r, "segment");
  hpam_register_handler_bulk(ep, h_bounce, on_bounce, nullptr);
  hpam_register_handler_bulk(ep, h_back, on_back, nullptr);
  hpam_register_handler4(ep, h_stop, on_stop, nullptr);
  if (me == 1) {
    while (!stop_serving)
      if (hpam_poll(ep) < 0) return fail(r, "serve");
    return hpam_ep_destroy(ep) == HPAM_OK ? 0 : fail(r, "destroy");
  }
  const size_t max = hpam_max_bulk(ep);
  std::vector<char> src(max, 'p');
  const int iters = quick ? 2000 : 10000;
  r->nsizes = 0;
  for (size_t s = 8; r->nsizes < 16; s = std::min(s * 4, max)) {
    if (round_trips(ep, src.data(), s, 200, sink_base) < 0) return fail(r, "warm up");
    std::vector<double> v;
    for (int rep = 0; rep < reps; ++rep) {
      const double t = round_trips(ep, src.data(), s, iters, sink_base);
      if (t < 0) return fail(r, "ping-pong");
      v.push_back(t);
    }
    r->sizes[r->nsizes] = s;
    r->rtt_ns[r->nsizes++] = median(v);
    if (s == max) break;
  }
  if (hpam_request_4(ep, 1, h_stop, 0, 0, 0, 0) != HPAM_OK) return fail(r, "stop");
  return hpam_ep_destroy(ep) == HPAM_OK ? 0 : fail(r, "destroy");
}

}  // namespace

int main(int argc, char** argv) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.nprocs = 2;
  cfg.poll_on_send = 0;
  bool quick = false;
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
      reps = 3;
    } else if (a == "--nic" && i + 1 < argc)
      cfg.nic = argv[++i];
    else if (a == "--reps" && i + 1 < argc)
      reps = std::max(1, std::min(64, std::atoi(argv[++i])));
    else {
      std::fprintf(stderr, "usage: am_pingpong [--quick] [--nic medusa|hamlyn] [--reps R]\n");
      return 2;
    }
  }
  const std::string job = "pingpong-" + std::to_string(getpid());
  cfg.job = job.c_str();
  auto* r = static_cast<result_area*>(mmap(nullptr, sizeof(result_area), PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (r == MAP_FAILED) return 1;
  std::vector<char> sink(sink_bytes);
  sink_base = sink.data();
  pid_t kids[2];
  for (int p = 0; p < 2; ++p) {
    kids[p] = fork();
    if (kids[p] == 0) {
      alarm(600);
      _exit(run(cfg, p, quick, reps, r));
    }
  }
  int bad = 0;
  for (pid_t k : kids) {
    int st;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
  }
  if (bad || r->error) {
    std::fprintf(stderr, "am_pingpong: failed: %s\n", r->error ? r->message : "a process died");
    return 1;
  }
  std::printf("metric,size,value\n");
  for (int s = 0; s < r->nsizes; ++s)
    std::printf("rtt_ns,%zu,%.1f\none_way_ns,%zu,%.1f\n", r->sizes[s], r->rtt_ns[s], r->sizes[s],
                r->rtt_ns[s] / 2);
  return 0;
}
