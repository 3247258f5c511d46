// LogP signature of the native active messages (HP-LAM report, section 4.2),
// between two forked processes; process 1 answers each 4-word request with
// a 4-word reply.
//   RTT  ping-pong of 4-word request/reply
//   o_s  time per request in a burst of back-to-back sends (no waiting: D is
//        raised so the burst never stalls)
//   g    time per message in a saturating stream
//   T(d) time per message when the sender waits d after each send; the gap
//        stays g while o_s + o_r + d < g, then grows: the d where it starts
//        to rise gives o_r = g - o_s - d (0 when it rises at once)
//   L    = RTT/2 - o_s - o_r
// Prints CSV rows: param,value_ns and signature,delay_ns,interval_ns.
//   am_logp [--nic medusa|hamlyn] [--quick]
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hpam_am.h"
#include "sys/clock.hpp"

namespace {

enum : unsigned { h_ping = 1, h_pong = 2, h_stop = 3 };
volatile uint64_t pongs = 0;
volatile bool stop = false;

void on_ping(hpam_token_t* t, void*, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  (void)hpam_reply_4(t, h_pong, a0, 0, 0, 0);
}
void on_pong(hpam_token_t*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  pongs = pongs + 1;
}
void on_stop(hpam_token_t*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  stop = true;
}

struct results {
  double rtt, os, g, deltas[64], intervals[64];
  int npoints;
  int error;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void spin_ns(const hpam::sys::clock& c, uint64_t ns) {
  const uint64_t end = c.now_ns() + ns;
  while (c.now_ns() < end) {
  }
}

// Time per message for `count` requests with `delay` after each send.
double stream(hpam_ep_t* ep, const hpam::sys::clock& c, int count, uint64_t delay) {
  pongs = 0;
  const uint64_t t0 = c.now_ns();
  for (int i = 0; i < count; ++i) {
    if (hpam_request_4(ep, 1, h_ping, i, 0, 0, 0) != HPAM_OK) return -1;
    if (delay) spin_ns(c, delay);
  }
  while (pongs < static_cast<uint64_t>(count)) hpam_poll(ep);
  return static_cast<double>(c.now_ns() - t0) / count;
}

int measure(hpam_ep_t* ep, results* r, bool quick) {
  hpam::sys::clock c;
  const int reps = quick ? 3 : 7, n = quick ? 2000 : 20000;
  std::vector<double> v;
  for (int rep = 0; rep < reps; ++rep) {  // RTT
    pongs = 0;
    const uint64_t t0 = c.now_ns();
    for (int i = 0; i < n; ++i) {
      if (hpam_request_4(ep, 1, h_ping, i, 0, 0, 0) != HPAM_OK) return 1;
      while (pongs <= static_cast<uint64_t>(i)) hpam_poll(ep);
    }
    v.push_back(static_cast<double>(c.now_ns() - t0) / n);
  }
  r->rtt = median(v);
  v.clear();
  const int burst = 32;                        // < D: never stalls
  for (int rep = 0; rep < reps * 20; ++rep) {  // o_s
    pongs = 0;
    const uint64_t t0 = c.now_ns();
    for (int i = 0; i < burst; ++i)
      if (hpam_try_request_4(ep, 1, h_ping, i, 0, 0, 0) != HPAM_OK) return 2;
    v.push_back(static_cast<double>(c.now_ns() - t0) / burst);
    while (pongs < static_cast<uint64_t>(burst)) hpam_poll(ep);
  }
  r->os = median(v);
  v.clear();
  for (int rep = 0; rep < reps; ++rep) v.push_back(stream(ep, c, n, 0));  // g
  r->g = median(v);
  r->npoints = 0;
  for (uint64_t d = 0; d <= 3000 && r->npoints < 64; d += quick ? 250 : 100) {
    v.clear();
    for (int rep = 0; rep < reps; ++rep) v.push_back(stream(ep, c, n / 4, d));
    r->deltas[r->npoints] = static_cast<double>(d);
    r->intervals[r->npoints++] = median(v);
  }
  return 0;
}

int run(int me, results* r, const std::string& job, const char* nic, bool quick) {
  hpam_config_t cfg;
  hpam_config_init(&cfg);
  cfg.job = job.c_str();
  cfg.nprocs = 2;
  cfg.my_proc = me;
  cfg.nic = nic;
  cfg.depth = 64;  // bursts of back-to-back sends never stall
  cfg.poll_on_send = 0;
  hpam_ep_t* ep;
  if (hpam_ep_create(&cfg, &ep) != HPAM_OK || hpam_connect_all(ep) != HPAM_OK) return 10;
  hpam_register_handler4(ep, h_ping, on_ping, nullptr);
  hpam_register_handler4(ep, h_pong, on_pong, nullptr);
  hpam_register_handler4(ep, h_stop, on_stop, nullptr);
  int rc = 0;
  if (me == 1) {
    while (!stop) hpam_poll(ep);
  } else {
    rc = measure(ep, r, quick);
    (void)hpam_request_4(ep, 1, h_stop, 0, 0, 0, 0);
  }
  return hpam_ep_destroy(ep) == HPAM_OK ? rc : 11;
}

}  // namespace

int main(int argc, char** argv) {
  const char* nic = "medusa";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--nic") && i + 1 < argc)
      nic = argv[++i];
    else {
      std::fprintf(stderr, "am_logp: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const std::string job = "logp-" + std::to_string(getpid());
  auto* r = static_cast<results*>(
      mmap(nullptr, sizeof(results), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t kids[2];
  for (int p = 0; p < 2; ++p)
    if ((kids[p] = fork()) == 0) {
      alarm(600);
      _exit(run(p, r, job, nic, quick));
    }
  int bad = 0;
  for (pid_t k : kids) {
    int st;
    waitpid(k, &st, 0);
    bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  if (bad) {
    std::fprintf(stderr, "am_logp: failed\n");
    return 1;
  }
  // o_r from the signature: the last delay at which the interval is still g.
  double dstar = 0;
  for (int i = 0; i < r->npoints; ++i)
    if (r->intervals[i] <= r->g * 1.05) dstar = r->deltas[i];
  const double orecv = std::max(0.0, r->g - r->os - dstar);
  const double latency = std::max(0.0, r->rtt / 2 - r->os - orecv);
  std::printf("param,value_ns\nrtt,%.1f\nos,%.1f\nor,%.1f\ng,%.1f\nL,%.1f\n", r->rtt, r->os, orecv,
              r->g, latency);
  std::printf("signature,delay_ns,interval_ns\n");
  for (int i = 0; i < r->npoints; ++i)
    std::printf("signature,%.0f,%.1f\n", r->deltas[i], r->intervals[i]);
  return 0;
}
