// The torture run shared by test_xfer and test_med: per pattern, a fresh
// job of forked processes that transfer, wait, and check their segments
// byte for byte (torture.hpp), then (test_xfer) try a store and a get that
// straddle the destination's segment end, which the layer must refuse.
#include "torture.hpp"

namespace hpam::gam {
namespace {

struct run_config {
  std::string job, pattern, nic;
  int procs;
  uint64_t per_pair;
  endpoint_options ep;
  uint8_t* seg;
  control* ctl;
};

// Polls (and serves) until done() or `seconds`; false on timeout or error.
template <class Done>
bool wait_for(hpam_ep_t* ep, torture_state& s, const torture_ops& ops, Done done, double seconds,
              bool rejected_ok = false) {
  const double deadline = now_s() + seconds;
  while (!done()) {
    const int rc = hpam_poll(ep);
    if ((rc < 0 && !(rejected_ok && rc == HPAM_ERR_REJECTED)) || now_s() > deadline) return false;
    if (ops.serve) ops.serve(ep, s);
  }
  return true;
}

int transfer(hpam_ep_t* ep, torture_state& s, const torture_ops& ops) {
  for (uint64_t k = 0; k < s.lay.per_pair; ++k)
    for (int d = 0; d < s.lay.procs; ++d) {
      if (!in_pattern(s.pattern, s.me, d)) continue;
      if (ops.store(ep, s, d, k) != HPAM_OK) return 20;
      if (ops.get(ep, s, d, k) != HPAM_OK) return 21;
      if (ops.serve) ops.serve(ep, s);
    }
  const auto landed = [&] {
    return sum(s.stores_in) == s.expect_stores() && sum(s.gets_in) == s.expect_gets();
  };
  return wait_for(ep, s, ops, landed, 60) ? 0 : 22;
}

// My first destination, or -1.
int first_destination(const torture_state& s, int me) {
  for (int d = 0; d < s.lay.procs; ++d)
    if (in_pattern(s.pattern, me, d)) return d;
  return -1;
}

// A store and a get straddling d's segment end: both refused, nothing written.
int probe(hpam_ep_t* ep, torture_state& s, const torture_ops& ops) {
  const int d = first_destination(s, s.me);
  if (d < 0) return 0;
  const uint64_t edge = reinterpret_cast<uint64_t>(s.seg + s.lay.segment_bytes() - 8);
  uint8_t junk[16];
  std::memset(junk, 0xEE, sizeof junk);
  if (hpam_store(ep, d, 1, junk, sizeof junk, edge, 0) != HPAM_OK) return 30;
  if (hpam_get(ep, d, 1, edge, s.seg + s.lay.offset(2, d, 0), sizeof junk, 0) != HPAM_OK) return 31;
  hpam_counters_t c;
  const auto refused = [&] {
    return hpam_get_counters(ep, &c) == HPAM_OK && c.refusals_received >= 2;
  };
  return wait_for(ep, s, ops, refused, 20, true) ? 0 : 32;
}

int probed_here(const torture_state& s) {
  int n = 0;
  for (int p = 0; p < s.lay.procs; ++p) n += first_destination(s, p) == s.me ? 2 : 0;
  return n;
}

int check(const torture_state& s, const char* when) {
  const size_t bad = first_wrong_byte(s);
  if (bad == SIZE_MAX && !s.misplaced) return 0;
  std::fprintf(stderr,
               "%s: process %d: %s: byte %zu of the segment (%zu bytes) is wrong; %llu misplaced\n",
               s.pattern.c_str(), s.me, when, bad, s.lay.segment_bytes(),
               static_cast<unsigned long long>(s.misplaced));
  return 40;
}

int one_process(const torture_ops& ops, const run_config& rc, int me) {
  hpam_ep_t* ep = open_endpoint(rc.job, rc.procs, me, rc.ep, nullptr, 0);
  if (!ep) return 1;
  torture_state s;
  s.pattern = rc.pattern;
  s.me = me;
  s.seg = rc.seg;
  s.lay.init(rc.procs, rc.per_pair, hpam_max_bulk(ep));
  s.stores_in.assign(rc.procs, 0);
  s.gets_in.assign(rc.procs, 0);
  if (hpam_set_segment(ep, s.seg, s.lay.segment_bytes()) != HPAM_OK) return 2;
  ops.install(ep, &s);
  fill_segment(s);
  const auto serve = [&] {
    if (ops.serve) ops.serve(ep, s);
  };
  if (!barrier(rc.ctl, ep, rc.procs, 1, serve)) return 3;
  int r = transfer(ep, s, ops);
  if (!barrier(rc.ctl, ep, rc.procs, 2, serve)) return r ? r : 4;
  if (!r) r = check(s, "after the transfers");
  if (ops.probe_segment && !r) r = probe(ep, s, ops);
  if (!barrier(rc.ctl, ep, rc.procs, 3, serve)) return r ? r : 5;
  hpam_counters_t c;
  if (ops.probe_segment && !r &&
      (hpam_get_counters(ep, &c) != HPAM_OK ||
       c.segment_rejections != static_cast<uint64_t>(probed_here(s))))
    r = 41;
  if (ops.probe_segment && !r) r = check(s, "after the refused transfers");
  if (!barrier(rc.ctl, ep, rc.procs, 4, serve)) return r ? r : 6;
  if (rc.ep.drop + rc.ep.duplicate + rc.ep.corrupt + rc.ep.reorder > 0 &&
      hpam_get_counters(ep, &c) == HPAM_OK)
    std::printf("%s,%s,%s,process,%d,wire_faults,%llu,retransmissions,%llu\n", ops.name,
                rc.nic.c_str(), rc.pattern.c_str(), me,
                static_cast<unsigned long long>(c.wire_dropped + c.wire_duplicated +
                                                c.wire_corrupted + c.wire_reordered),
                static_cast<unsigned long long>(c.retransmissions));
  return hpam_ep_destroy(ep) == HPAM_OK ? r : 7;
}

}  // namespace

int torture_main(int argc, char** argv, const torture_ops& ops) {
  std::vector<option> opts = {{"nic", "medusa|hamlyn", "medusa"},
                              {"procs", "P", "3"},
                              {"pattern", "1to1|all-to-1|all-to-all|all", "all"},
                              {"per-pair", "K", "16"}};
  fault_options(opts);
  if (!parse(argc, argv, ops.name, opts)) return 2;
  const int procs = static_cast<int>(num(opts, "procs"));
  const uint64_t k = num(opts, "per-pair");
  if (procs < 2 || procs > 64 || k < 3) {
    std::fprintf(stderr, "%s: --procs 2..64, --per-pair at least 3\n", ops.name);
    return 2;
  }
  const std::string which = get(opts, "pattern");
  torture_layout most;
  most.init(procs, k, 65536);  // no endpoint's max_bulk is larger
  uint8_t* seg = private_area(most.segment_bytes() + torture_layout::tail);
  int bad = 0;
  for (const char* pattern : {"1to1", "all-to-1", "all-to-all"}) {
    if (which != "all" && which != pattern) continue;
    run_config rc{test::unique_job(ops.name), pattern, get(opts, "nic"), procs, k,
                  endpoint_from(opts),        seg,     make_control()};
    const double t0 = now_s();
    const int r = run(procs, 120, [&](int me) { return one_process(ops, rc, me); });
    std::printf("%s,%s,%s,procs,%d,seconds,%.3f,%s\n", ops.name, rc.nic.c_str(), pattern, procs,
                now_s() - t0, r ? "FAILED" : "ok");
    bad |= r;
  }
  if (!bad) std::printf("%s: ok\n", ops.name);
  return bad;
}

}  // namespace hpam::gam
