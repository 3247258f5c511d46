// test_med (HP-LAM 4.1): test_xfer with medium messages instead of bulk
// transfers. A store is a medium request whose handler copies the bytes to
// their block; a get is a 4-word request the owner's handler queues, and
// the owner's main loop answers with a medium request carrying the bytes
// (the API has no medium reply: a request handler may only reply, and
// hpam_reply_4 carries 4 words). Same patterns, same byte-for-byte check of
// every segment and its guard bytes.
//
//   test_med [--nic medusa|hamlyn] [--procs P] [--pattern 1to1|all-to-1|all-to-all|all]
//            [--per-pair K] [--drop p --duplicate p --corrupt p --reorder p]
#include "torture.hpp"

namespace hpam::gam {
namespace {

enum : unsigned { h_store = 1, h_ask = 2, h_answer = 3 };

// A medium message carrying the k-th transfer of arg's process: copied to
// its block in `region` (0: stores from it; 2: gets from it) if it came
// from that process and has exactly the transfer's length.
void land(hpam_token_t* t, torture_state& s, int region, const void* data, size_t len, uint64_t arg,
          std::vector<uint64_t>& count) {
  const int who = proc_of(arg);
  const uint64_t k = k_of(arg);
  if (who != hpam_token_source(t) || who >= s.lay.procs || k >= s.lay.per_pair ||
      len != (region == 0 ? s.lay.length(who, s.me, k) : s.lay.length(s.me, who, k))) {
    s.misplaced++;
    return;
  }
  std::memcpy(s.seg + s.lay.offset(region, who, k), data, len);
  count[who]++;
}

void stored(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  land(t, *s, 0, data, len, arg, s->stores_in);
}
void asked(hpam_token_t* t, void* ctx, uint64_t k, uint64_t, uint64_t, uint64_t) {
  static_cast<torture_state*>(ctx)->pending.emplace_back(hpam_token_source(t), k);
}
void answered(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  land(t, *s, 2, data, len, arg, s->gets_in);
}

void install(hpam_ep_t* ep, torture_state* s) {
  hpam_register_handler_bulk(ep, h_store, stored, s);
  hpam_register_handler4(ep, h_ask, asked, s);
  hpam_register_handler_bulk(ep, h_answer, answered, s);
}

int store(hpam_ep_t* ep, torture_state& s, int d, uint64_t k) {
  const auto& src = store_source(s, d, k);
  const iovec iov{const_cast<uint8_t*>(src.data()), src.size()};
  return hpam_request_medium(ep, d, h_store, &iov, 1, encode(s.me, k));
}

int get(hpam_ep_t* ep, torture_state& s, int d, uint64_t k) {
  return hpam_request_4(ep, d, h_ask, k, 0, 0, 0);
}

// Answers queued gets from the main loop (never from inside a handler).
void serve(hpam_ep_t* ep, torture_state& s) {
  while (!s.pending.empty()) {
    const auto [reader, k] = s.pending.front();
    s.pending.pop_front();
    if (reader >= s.lay.procs || k >= s.lay.per_pair || !in_pattern(s.pattern, reader, s.me)) {
      s.misplaced++;
      continue;
    }
    const iovec iov{s.seg + s.lay.offset(1, reader, k), s.lay.length(reader, s.me, k)};
    if (hpam_request_medium(ep, reader, h_answer, &iov, 1, encode(s.me, k)) != HPAM_OK)
      s.misplaced++;
  }
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  const torture_ops ops{"test_med", install, store, get, serve, false};
  return torture_main(argc, argv, ops);
}
