// ping_pong (HP-LAM 4.1): process 0 sends a 4-word request, process 1's
// request handler replies; n times. Average round trip = total time / n.
// Checks that every reply came back once and carried its request's value.
//
//   ping_pong [--nic medusa|hamlyn] [--iters n]
// Prints "ping_pong,<nic>,rtt_us,<v>" and "ping_pong: ok".
#include "gam_harness.hpp"

namespace hpam::gam {
namespace {

enum : unsigned { h_ping = 1, h_pong = 2 };
struct state {
  uint64_t replies = 0, last = 0;
};

void ping(hpam_token_t* t, void*, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  (void)hpam_reply_4(t, h_pong, a0 + 1, 0, 0, 0);
}
void pong(hpam_token_t*, void* ctx, uint64_t a0, uint64_t, uint64_t, uint64_t) {
  auto* s = static_cast<state*>(ctx);
  s->replies++;
  s->last = a0;
}

// Process 0's side: returns 0, or a code naming the first thing wrong.
int pinger(hpam_ep_t* ep, state& s, uint64_t iters, const std::string& nic) {
  const uint64_t warm = iters / 10 + 1;
  double t0 = 0;
  for (uint64_t i = 0; i < warm + iters; ++i) {
    if (i == warm) t0 = now_s();
    if (hpam_request_4(ep, 1, h_ping, i, 0, 0, 0) != HPAM_OK) return 10;
    const double deadline = now_s() + 30;
    while (s.replies <= i)
      if (hpam_poll(ep) < 0 || now_s() > deadline) return 11;
    if (s.last != i + 1 || s.replies != i + 1) return 12;
  }
  std::printf("ping_pong,%s,rtt_us,%.3f\n", nic.c_str(),
              (now_s() - t0) / static_cast<double>(iters) * 1e6);
  return 0;
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  std::vector<option> opts = {{"nic", "medusa|hamlyn", "medusa"}, {"iters", "n", "10000"}};
  if (!parse(argc, argv, "ping_pong", opts)) return 2;
  const std::string job = hpam::test::unique_job("gam-ping-pong");
  control* c = make_control();
  uint8_t* seg = private_area(4096);
  const int rc = run(2, 120, [&](int me) {
    hpam_ep_t* ep = open_endpoint(job, 2, me, endpoint_from(opts), seg, 4096);
    if (!ep) return 1;
    state s;
    hpam_register_handler4(ep, h_ping, ping, &s);
    hpam_register_handler4(ep, h_pong, pong, &s);
    if (!barrier(c, ep, 2, 1)) return 2;
    const int r = me == 0 ? pinger(ep, s, num(opts, "iters"), get(opts, "nic")) : 0;
    if (!barrier(c, ep, 2, 2)) return r ? r : 3;
    return hpam_ep_destroy(ep) == HPAM_OK ? r : 4;
  });
  if (rc == 0) std::printf("ping_pong: ok\n");
  return rc;
}
