// Native active-message benchmark (no MPI): two forked processes, each
// pinned to a CPU of its own.
//   * round trip of a 4-word request/reply (HPAM's remote read, Figure 7):
//     the median of short bursts, each followed by a burst of the bare
//     cache-line ping-pong between the same two processes (line_floor.hpp),
//     so that the round trip over the floor is divided pair by pair, at
//     the same moment, whatever the host does with the two vCPUs meanwhile
//   * bulk store bandwidth against message size (Figure 8), N-half, each
//     size the median of --reps repetitions. Faults may be injected
// (--drop/--duplicate/--corrupt/--reorder/--delay); losses injected and
// retransmissions observed are then reported.
//
//   am_bench [--quick] [--nic medusa] [--depth D] [--block B] [--reps R] [--bursts N]
//            [--drop p] [--duplicate p] [--corrupt p] [--reorder p] [--delay p]
//            [--csv]
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
#include "line_floor.hpp"
#include "sys/clock.hpp"

namespace {

struct options {
  bool quick = false, csv = false;
  int reps = 7;
  int bursts = 400;  // pairs of bursts for the round trip (--bursts)
  hpam_config_t cfg;
};

constexpr int max_bursts = 1024;  // pairs of short bursts: round trips, then cache-line round trips
constexpr int burst_iters = 1000;

struct result_area {            // written by the measuring process, read by the parent
  hpam_bench::line_pair lines;  // the cache-line ping-pong between the two processes
  int bursts;
  double burst_ns[max_bursts];  // ns per 4-word round trip in burst b
  double line_ns[max_bursts];   // ns per cache-line round trip right after burst b
  double bw_mbs[32][64];
  size_t sizes[32];
  int nsizes;
  hpam_counters_t counters;
  int error;
  char message[256];
};

enum : unsigned { h_ping = 1, h_pong = 2, h_sink = 3, h_line = 4 };
constexpr size_t sink_bytes = 1 << 17;  // process 1's segment: the stores land in it
volatile uint64_t pongs = 0;
volatile uint64_t stores_seen = 0;

void on_ping(hpam_token_t* t, void*, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  (void)hpam_reply_4(t, h_pong, a0, a1, a2, a3);
}
void on_pong(hpam_token_t*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  pongs = pongs + 1;
}
void on_sink(hpam_token_t*, void*, void*, size_t, uint64_t) {
  stores_seen = stores_seen + 1;
}
volatile bool line_turn = false;  // process 1: serve a burst of cache-line round trips next
void on_line(hpam_token_t* t, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  line_turn = true;
  (void)hpam_reply_4(t, h_pong, 0, 0, 0, 0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int fail(result_area* r, const char* what) {
  r->error = 1;
  std::snprintf(r->message, sizeof r->message, "%s: %s", what, hpam_last_error());
  return 1;
}

// n 4-word round trips to process 1, one at a time; negative on error.
int ping_pong(hpam_ep_t* ep, int n) {
  pongs = 0;
  for (int i = 0; i < n; ++i) {
    if (hpam_request_4(ep, 1, h_ping, i, 0, 0, 0) != HPAM_OK) return -1;
    while (pongs <= static_cast<uint64_t>(i)) hpam_poll(ep);
  }
  return 0;
}

// Process 0 measures; process 1 serves until told to stop (handler 0 of 4 words).
volatile bool stop_serving = false;
void on_stop(hpam_token_t*, void*, uint64_t, uint64_t, uint64_t, uint64_t) {
  stop_serving = true;
}

int serve(hpam_ep_t* ep, result_area* r) {
  uint64_t line_count = 0;
  while (!stop_serving) {
    if (hpam_poll(ep) < 0) return fail(r, "serve");
    if (line_turn) {
      line_turn = false;
      hpam_bench::line_serve(&r->lines, line_count, burst_iters);
    }
  }
  return hpam_ep_destroy(ep) == HPAM_OK ? 0 : fail(r, "destroy");
}

// Bursts of 4-word round trips, each followed by a burst of cache-line
// round trips (process 1 switches to them on an h_line request).
int round_trips(hpam_ep_t* ep, result_area* r) {
  hpam::sys::clock clk;
  uint64_t line_count = 0;
  if (ping_pong(ep, 200) < 0) return fail(r, "ping");  // warm up
  for (int b = 0; b < r->bursts; ++b) {
    const uint64_t t0 = clk.now_ns();
    if (ping_pong(ep, burst_iters) < 0) return fail(r, "ping");
    r->burst_ns[b] = static_cast<double>(clk.now_ns() - t0) / burst_iters;
    pongs = 0;
    if (hpam_request_4(ep, 1, h_line, 0, 0, 0, 0) != HPAM_OK) return fail(r, "line");
    while (pongs == 0) hpam_poll(ep);
    r->line_ns[b] = hpam_bench::line_burst(&r->lines, line_count, burst_iters, clk);
  }
  return 0;
}

int run(const options& o, int me, result_area* r, char* sink) {
  (void)hpam_bench::pin_to_cpu(me);
  hpam_config_t cfg = o.cfg;
  cfg.my_proc = me;
  hpam_ep_t* ep;
  if (hpam_ep_create(&cfg, &ep) != HPAM_OK || hpam_connect_all(ep) != HPAM_OK)
    return fail(r, "setup");
  if (hpam_set_segment(ep, sink, sink_bytes) != HPAM_OK)
    return fail(r, "segment");  // stores land here
  hpam_register_handler4(ep, h_ping, on_ping, nullptr);
  hpam_register_handler4(ep, h_pong, on_pong, nullptr);
  hpam_register_handler_bulk(ep, h_sink, on_sink, nullptr);
  hpam_register_handler4(ep, 0, on_stop, nullptr);
  hpam_register_handler4(ep, h_line, on_line, nullptr);
  if (me == 1) return serve(ep, r);
  if (round_trips(ep, r) != 0) return 1;
  hpam::sys::clock clk;
  const size_t max = hpam_max_bulk(ep);
  std::vector<char> src(max, 'x');
  r->nsizes = 0;
  for (size_t s = 16; s <= max && r->nsizes<32; s = s * 2> max && s != max ? max : s * 2) {
    r->sizes[r->nsizes] = s;
    // bytes per repetition: 16 MiB (quick 1 MiB); 64 MiB made this step take minutes on a loaded
    // machine
    const size_t total = o.quick ? (1u << 20) : (16u << 20);
    const size_t count = std::max<size_t>(200, total / s);
    for (int rep = 0; rep < o.reps; ++rep) {
      const uint64_t t0 = clk.now_ns();
      for (size_t i = 0; i < count; ++i)
        if (hpam_store(ep, 1, h_sink, src.data(), s, reinterpret_cast<uint64_t>(sink), 0) !=
            HPAM_OK)
          return fail(r, "store");
      // all answered: one more request-reply round trip behind them on every instance
      pongs = 0;
      if (hpam_request_4(ep, 1, h_ping, 0, 0, 0, 0) != HPAM_OK) return fail(r, "ping");
      while (pongs == 0) hpam_poll(ep);
      const double secs = static_cast<double>(clk.now_ns() - t0) / 1e9;
      r->bw_mbs[r->nsizes][rep] = static_cast<double>(s * count) / secs / 1e6;
    }
    r->nsizes++;
    if (s == max) break;
  }
  hpam_get_counters(ep, &r->counters);
  if (hpam_request_4(ep, 1, 0, 0, 0, 0, 0) != HPAM_OK) return fail(r, "stop");
  return hpam_ep_destroy(ep) == HPAM_OK ? 0 : fail(r, "destroy");
}

double arg_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "am_bench: %s needs a value\n", argv[i]);
    std::exit(2);
  }
  return std::atof(argv[++i]);
}

options parse(int argc, char** argv) {
  options o;
  hpam_config_init(&o.cfg);
  o.cfg.nprocs = 2;
  o.cfg.poll_on_send = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
      o.reps = 5;
      o.bursts = 100;
    } else if (a == "--bursts")
      o.bursts = std::max(1, std::min(max_bursts, static_cast<int>(arg_value(i, argc, argv))));
    else if (a == "--csv")
      o.csv = true;
    else if (a == "--reps")
      o.reps = std::max(1, std::min(64, static_cast<int>(arg_value(i, argc, argv))));
    else if (a == "--depth")
      o.cfg.depth = static_cast<uint32_t>(arg_value(i, argc, argv));
    else if (a == "--block")
      o.cfg.block_size = static_cast<uint32_t>(arg_value(i, argc, argv));
    else if (a == "--nic" && i + 1 < argc)
      o.cfg.nic = argv[++i];
    else if (a == "--drop")
      o.cfg.fault_drop = arg_value(i, argc, argv);
    else if (a == "--duplicate")
      o.cfg.fault_duplicate = arg_value(i, argc, argv);
    else if (a == "--corrupt")
      o.cfg.fault_corrupt = arg_value(i, argc, argv);
    else if (a == "--reorder")
      o.cfg.fault_reorder = arg_value(i, argc, argv);
    else if (a == "--delay")
      o.cfg.fault_delay = arg_value(i, argc, argv);
    else if (a == "--no-crc")
      o.cfg.crc_check = 0;
    else if (a == "--no-key-check")
      o.cfg.key_check = 0;
    else if (a == "--timeout-us")
      o.cfg.timeout_ns = static_cast<uint64_t>(arg_value(i, argc, argv) * 1000);
    else {
      std::fprintf(stderr, "am_bench: unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

void report(const options& o, const result_area& r) {
  using hpam_bench::quantile;
  const std::vector<double> rtt(r.burst_ns, r.burst_ns + r.bursts),
      line(r.line_ns, r.line_ns + r.bursts);
  std::vector<double> over(rtt.size());
  for (size_t b = 0; b < rtt.size(); ++b) over[b] = rtt[b] / line[b];
  const double rinf =
      median(std::vector<double>(r.bw_mbs[r.nsizes - 1], r.bw_mbs[r.nsizes - 1] + o.reps));
  if (o.csv) {
    std::printf("metric,size,value\nrtt_ns,32,%.1f\nrtt_best_ns,32,%.1f\n", quantile(rtt, 0.5),
                quantile(rtt, 0));
    std::printf("rtt_p10_ns,32,%.1f\nrtt_p90_ns,32,%.1f\n", quantile(rtt, 0.1), quantile(rtt, 0.9));
    std::printf("floor_ns,32,%.1f\nover_floor,32,%.3f\n", quantile(line, 0.5), quantile(over, 0.5));
    std::printf("over_floor_p10,32,%.3f\nover_floor_p90,32,%.3f\n", quantile(over, 0.1),
                quantile(over, 0.9));
    for (int s = 0; s < r.nsizes; ++s)
      std::printf("bandwidth_MBps,%zu,%.1f\n", r.sizes[s],
                  median(std::vector<double>(r.bw_mbs[s], r.bw_mbs[s] + o.reps)));
    return;
  }
  std::printf("nic %s, D=%u, block %u B, CRC %s, key check %s, median of %d runs\n", o.cfg.nic,
              o.cfg.depth, o.cfg.block_size, o.cfg.crc_check ? "on" : "off",
              o.cfg.key_check ? "on" : "off", o.reps);
  std::printf(
      "4-word request/reply round trip: %.0f ns (median of %d bursts of %d; best %.0f ns)\n",
      quantile(rtt, 0.5), r.bursts, burst_iters, quantile(rtt, 0));
  std::printf(
      "cache-line round trip between the bursts: %.0f ns; round trip over it: %.2f (10%%-90%%: "
      "%.2f-%.2f)\n",
      quantile(line, 0.5), quantile(over, 0.5), quantile(over, 0.1), quantile(over, 0.9));
  std::printf("%10s %12s\n", "bytes", "MB/s");
  double nhalf = 0;
  for (int s = 0; s < r.nsizes; ++s) {
    const double bw = median(std::vector<double>(r.bw_mbs[s], r.bw_mbs[s] + o.reps));
    if (nhalf == 0 && bw >= rinf / 2) nhalf = static_cast<double>(r.sizes[s]);
    std::printf("%10zu %12.1f\n", r.sizes[s], bw);
  }
  std::printf("R_inf %.1f MB/s, N_half <= %.0f B\n", rinf, nhalf);
  const hpam_counters_t& k = r.counters;
  std::printf(
      "faults injected: dropped %llu, duplicated %llu, corrupted %llu, reordered %llu, delayed "
      "%llu\n",
      (unsigned long long)k.wire_dropped, (unsigned long long)k.wire_duplicated,
      (unsigned long long)k.wire_corrupted, (unsigned long long)k.wire_reordered,
      (unsigned long long)k.wire_delayed);
  std::printf(
      "protocol: requests %llu, timeouts %llu, retransmissions %llu, stalls %llu, "
      "stale replies %llu, CRC failures %llu, overflow drops %llu\n",
      (unsigned long long)k.requests_sent, (unsigned long long)k.timeouts,
      (unsigned long long)k.retransmissions, (unsigned long long)k.stalls,
      (unsigned long long)k.stale_replies, (unsigned long long)k.crc_failures,
      (unsigned long long)k.overflow_drops);
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse(argc, argv);
  std::string job = "bench-" + std::to_string(getpid());
  o.cfg.job = job.c_str();
  auto* r = static_cast<result_area*>(mmap(nullptr, sizeof(result_area), PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (r == MAP_FAILED) return 1;
  r->bursts = o.bursts;
  std::vector<char> sink(sink_bytes);
  pid_t kids[2];
  for (int p = 0; p < 2; ++p) {
    kids[p] = fork();
    if (kids[p] == 0) {
      alarm(600);
      _exit(run(o, p, r, sink.data()));
    }
  }
  int bad = 0;
  for (pid_t k : kids) {
    int st;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
  }
  if (bad || r->error) {
    std::fprintf(stderr, "am_bench: failed: %s\n", r->error ? r->message : "a process died");
    return 1;
  }
  report(o, *r);
  return 0;
}
