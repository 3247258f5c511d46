// test_xfer (HP-LAM 4.1): the GAM torture test with bulk transfers. In each
// pattern (1-to-1, all-to-1, all-to-all) every source performs K
// hpam_store()s and K hpam_get()s of lengths from 1 byte to the largest
// packet, at shifting misalignments, into and out of its destinations'
// segments; the data is checked, and every byte around every destination
// block (and past the segment's end) must be untouched. Finally a store and
// a get straddling the destination's segment end must be refused, counted
// on both sides, and write nothing.
//
//   test_xfer [--nic medusa|hamlyn] [--procs P] [--pattern 1to1|all-to-1|all-to-all|all]
//             [--per-pair K] [--drop p --duplicate p --corrupt p --reorder p]
#include "torture.hpp"

namespace hpam::gam {
namespace {

enum : unsigned { h_store = 1, h_got = 2 };

// A store landed at me: right place and length for (source, k)?
void stored(hpam_token_t* t, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  const int src = proc_of(arg);
  const uint64_t k = k_of(arg);
  if (src != hpam_token_source(t) || src >= s->lay.procs || k >= s->lay.per_pair ||
      data != s->seg + s->lay.offset(0, src, k) || len != s->lay.length(src, s->me, k)) {
    s->misplaced++;
    return;
  }
  s->stores_in[src]++;
}
// A get came back: arg names the owner and k.
void got(hpam_token_t*, void* ctx, void* data, size_t len, uint64_t arg) {
  auto* s = static_cast<torture_state*>(ctx);
  const int owner = proc_of(arg);
  const uint64_t k = k_of(arg);
  if (owner >= s->lay.procs || k >= s->lay.per_pair ||
      data != s->seg + s->lay.offset(2, owner, k) || len != s->lay.length(s->me, owner, k)) {
    s->misplaced++;
    return;
  }
  s->gets_in[owner]++;
}

void install(hpam_ep_t* ep, torture_state* s) {
  hpam_register_handler_bulk(ep, h_store, stored, s);
  hpam_register_handler_bulk(ep, h_got, got, s);
}

int store(hpam_ep_t* ep, torture_state& s, int d, uint64_t k) {
  const auto& src = store_source(s, d, k);
  const uint64_t to = reinterpret_cast<uint64_t>(s.seg + s.lay.offset(0, s.me, k));
  return hpam_store(ep, d, h_store, src.data(), src.size(), to, encode(s.me, k));
}

int get(hpam_ep_t* ep, torture_state& s, int d, uint64_t k) {
  const uint64_t from = reinterpret_cast<uint64_t>(s.seg + s.lay.offset(1, s.me, k));
  return hpam_get(ep, d, h_got, from, s.seg + s.lay.offset(2, d, k), s.lay.length(s.me, d, k),
                  encode(d, k));
}

}  // namespace
}  // namespace hpam::gam

int main(int argc, char** argv) {
  using namespace hpam::gam;
  const torture_ops ops{"test_xfer", install, store, get, nullptr, true};
  return torture_main(argc, argv, ops);
}
