// thru_bulk (HP-LAM 4.1): process 0 stores s bytes to process 1 n times
// without waiting for each to complete (each store blocks only while all D
// request instances are in flight), into a ring of slots in process 1's
// segment. Average bandwidth = n s / total time, the clock stopping when
// process 1 reports (answering a count request) that all n have landed.
// Process 1's handler checks each store's place, length, and first and last
// bytes.
//
//   thru_bulk [--nic medusa|hamlyn] [--iters n] [--sizes s1,s2,...]
// Prints "thru_bulk,<nic>,<bytes>,<MB/s>" per size and "thru_bulk: ok".
#include "gam_harness.hpp"

namespace hpam::gam {
namespace {

enum : unsigned { h_data = 1, h_count = 2, h_counted = 3 };
constexpr uint64_t ring = 16;

uint8_t pattern(uint64_t i, size_t k) {
  return static_cast<uint8_t>(i * 13 + k * 5 + 1);
}

struct state {
  uint8_t* seg;
  size_t len = 0;
  uint64_t landed = 0, bad = 0, counted = 0, answers = 0;
};

void data(hpam_token_t*, void* ctx, void* d, size_t len, uint64_t i) {
  auto* s = static_cast<state*>(ctx);
  const auto* b = static_cast<const uint8_t*>(d);
  if (b != s->seg + (i % ring) * s->len || len != s->len || b[0] != pattern(i, 0) ||
      b[len - 1] != pattern(i, len - 1))
    s->bad++;
  s->landed++;
}
void count(hpam_token_t* t, void* ctx, uint64_t, uint64_t, uint64_t, uint64_t) {
  auto* s = static_cast<state*>(ctx);
  (void)hpam_reply_4(t, h_counted, s->landed, s->bad, 0, 0);
}
void counted(hpam_token_t*, void* ctx, uint64_t landed, uint64_t bad, uint64_t, uint64_t) {
  auto* s = static_cast<state*>(ctx);
  s->counted = landed;
  s->bad += bad;
  s->answers++;
}

int measure(hpam_ep_t* ep, state& s, uint64_t iters, const std::string& nic) {
  std::vector<std::vector<uint8_t>> src(ring, std::vector<uint8_t>(s.len));
  const double t0 = now_s();
  for (uint64_t i = 0; i < iters; ++i) {
    auto& b = src[i % ring];
    b[0] = pattern(i, 0);
    b[s.len - 1] = pattern(i, s.len - 1);
    const uint64_t to = reinterpret_cast<uint64_t>(s.seg + (i % ring) * s.len);
    if (hpam_store(ep, 1, h_data, b.data(), s.len, to, i) != HPAM_OK) return 10;
  }
  const double deadline = now_s() + 60;
  for (s.counted = 0; s.counted < iters;) {  // stores may overtake each other and the count request
    const uint64_t asked = s.answers;
    if (hpam_request_4(ep, 1, h_count, 0, 0, 0, 0) != HPAM_OK) return 11;
    while (s.answers == asked)
      if (hpam_poll(ep) < 0 || now_s() > deadline) return 12;
  }
  const double t = now_s() - t0;
  std::printf("thru_bulk,%s,%zu,%.1f\n", nic.c_str(), s.len,
              static_cast<double>(iters) * s.len / t / 1e6);
  return s.bad || s.counted != iters ? 13 : 0;
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  std::vector<option> opts = {{"nic", "medusa|hamlyn", "medusa"},
                              {"iters", "n", "20000"},
                              {"sizes", "bytes,...", "64,1024,4096,8000"}};
  if (!parse(argc, argv, "thru_bulk", opts)) return 2;
  const std::string job = hpam::test::unique_job("gam-thru-bulk");
  const auto list = sizes(get(opts, "sizes"));
  const size_t most = largest(list);
  control* c = make_control();
  uint8_t* seg = private_area(ring * most);
  const int rc = run(2, 300, [&](int me) {
    hpam_ep_t* ep = open_endpoint(job, 2, me, endpoint_from(opts), seg, ring * most);
    if (!ep) return 1;
    state s{seg};
    hpam_register_handler_bulk(ep, h_data, data, &s);
    hpam_register_handler4(ep, h_count, count, &s);
    hpam_register_handler4(ep, h_counted, counted, &s);
    return each_size(
        "thru_bulk", c, ep, me, list, [&](size_t len) { s.len = len, s.landed = 0; },
        [&](size_t) { return measure(ep, s, num(opts, "iters"), get(opts, "nic")); },
        [&](size_t) { return s.bad ? 14 : 0; });
  });
  if (rc == 0) std::printf("thru_bulk: ok\n");
  return rc;
}
