// ping_bulk (HP-LAM 4.1): process 0 stores s bytes into process 1's
// segment; process 1's request handler stores the same s bytes back into
// process 0's segment (reply_store, GAM's am_reply_xfer); n times per size.
// Average bandwidth = 2 n s / total time. Every transfer's first and last
// bytes are checked as it lands, and the whole last transfer each way after
// the loop.
//
//   ping_bulk [--nic medusa|hamlyn] [--iters n] [--sizes s1,s2,...]
// Prints "ping_bulk,<nic>,<bytes>,<MB/s>" per size and "ping_bulk: ok".
#include "gam_harness.hpp"

namespace hpam::gam {
namespace {

enum : unsigned { h_there = 1, h_back = 2 };

uint8_t pattern(uint64_t i, size_t k) {
  return static_cast<uint8_t>(i * 31 + k * 7 + 3);
}

struct state {
  uint8_t* seg;  // this process's segment (the same address in both)
  uint8_t* src;  // process 0: what it sends (pattern of the current i)
  size_t len = 0;
  uint64_t arrivals = 0, bad = 0;
};

bool lands_right(const state& s, const void* data, size_t len, uint64_t i) {
  const auto* d = static_cast<const uint8_t*>(data);
  return d == s.seg && len == s.len && d[0] == pattern(i, 0) && d[len - 1] == pattern(i, len - 1);
}

void there(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t i) {
  auto* s = static_cast<state*>(ctx);
  if (!lands_right(*s, data, len, i)) s->bad++;
  s->arrivals++;
  if (hpam_reply_store(t, h_back, data, len, reinterpret_cast<uint64_t>(s->seg), i) != HPAM_OK)
    s->bad++;
}
void back(hpam_token_t*, void* ctx, void* data, size_t len, uint64_t i) {
  auto* s = static_cast<state*>(ctx);
  if (!lands_right(*s, data, len, i)) s->bad++;
  s->arrivals++;
}

// Process 0: one size; 0 or a code.
int measure(hpam_ep_t* ep, state& s, uint64_t iters, const std::string& nic) {
  double t0 = 0;
  const uint64_t warm = iters / 10 + 1;
  for (uint64_t i = 0; i < warm + iters; ++i) {
    if (i == warm) t0 = now_s();
    for (size_t k = 0; k < s.len; ++k) s.src[k] = pattern(i, k);
    if (hpam_store(ep, 1, h_there, s.src, s.len, reinterpret_cast<uint64_t>(s.seg), i) != HPAM_OK)
      return 10;
    const double deadline = now_s() + 30;
    while (s.arrivals <= i)
      if (hpam_poll(ep) < 0 || now_s() > deadline) return 11;
  }
  const double t = now_s() - t0;
  std::printf("ping_bulk,%s,%zu,%.1f\n", nic.c_str(), s.len, 2.0 * iters * s.len / t / 1e6);
  return s.bad ? 12 : 0;
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  std::vector<option> opts = {{"nic", "medusa|hamlyn", "medusa"},
                              {"iters", "n", "2000"},
                              {"sizes", "bytes,...", "64,1024,4096,8000"}};
  if (!parse(argc, argv, "ping_bulk", opts)) return 2;
  const std::string job = hpam::test::unique_job("gam-ping-bulk");
  const auto list = sizes(get(opts, "sizes"));
  const size_t most = largest(list);
  control* c = make_control();
  uint8_t* seg = private_area(most);
  const uint64_t iters = num(opts, "iters"), last = iters / 10 + iters;  // the last i
  const int rc = run(2, 300, [&](int me) {
    hpam_ep_t* ep = open_endpoint(job, 2, me, endpoint_from(opts), seg, most);
    if (!ep) return 1;
    std::vector<uint8_t> src(most);
    state s{seg, src.data()};
    hpam_register_handler_bulk(ep, h_there, there, &s);
    hpam_register_handler_bulk(ep, h_back, back, &s);
    return each_size(
        "ping_bulk", c, ep, me, list, [&](size_t len) { s.len = len, s.arrivals = 0; },
        [&](size_t) { return measure(ep, s, iters, get(opts, "nic")); },
        [&](size_t
                len) {  // the last transfer each way, whole: process 1 holds process 0's, and back
          for (size_t k = 0; k < len; ++k)
            if (seg[k] != pattern(last, k)) return 13;
          return s.bad ? 14 : 0;
        });
  });
  if (rc == 0) std::printf("ping_bulk: ok\n");
  return rc;
}
