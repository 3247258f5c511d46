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

// The bytes of the k-th transfer, copied to their block if they fit it exactly.
void land(torture_state& s, int region, int who, uint64_t k, size_t want, const void* data,
          size_t len, std::vector<uint64_t>& count) {
  if (who >= s.lay.procs || k >= s.lay.per_pair || len != want) {
    s.misplaced++;
    return;
  }
  std::memcpy(s.seg + s.lay.offset(region, who, k), data, len);
  count[who]++;
}

void stored(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  const int src = proc_of(arg);
  if (src != hpam_token_source(t)) {
    s->misplaced++;
    return;
  }
  land(*s, 0, src, k_of(arg), src < s->lay.procs ? s->lay.length(src, s->me, k_of(arg)) : 0, data,
       len, s->stores_in);
}
void asked(hpam_token_t* t, void* ctx, uint64_t k, uint64_t, uint64_t, uint64_t) {
  static_cast<torture_state*>(ctx)->pending.emplace_back(hpam_token_source(t), k);
}
void answered(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  const int owner = proc_of(arg);
  if (owner != hpam_token_source(t)) {
    s->misplaced++;
    return;
  }
  land(*s, 2, owner, k_of(arg), owner < s->lay.procs ? s->lay.length(s->me, owner, k_of(arg)) : 0,
       data, len, s->gets_in);
}

void install(hpam_ep_t* ep, torture_state* s) {
  hpam_register_handler_bulk(ep, h_store, stored, s);
  hpam_register_handler4(ep, h_ask, asked, s);
  hpam_register_handler_bulk(ep, h_answer, answered, s);
}

int store(hpam_ep_t* ep, torture_state& s, int d, uint64_t k) {
  const size_t len = s.lay.length(s.me, d, k);
  s.sources.emplace_back(len);
  auto& src = s.sources.back();
  for (size_t b = 0; b < len; ++b) src[b] = store_byte(s.me, d, k, b);
  const iovec iov{src.data(), len};
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
    if (hpam_request_medium(ep, reader, h_answer, &iov, 1, encode(s.me, k)) != HPAM_OK) s.misplaced++;
  }
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  const torture_ops ops{"test_med", install, store, get, serve, false};
  return torture_main(argc, argv, ops);
}
