// Spread arrays: elements dealt block-cyclically over all processors (Split-C
// `T a[n]::` is cyclic, `T a[n]::[b]` block-cyclic). Element i lives in
// block i / block, on processor (i / block) mod P, at local element
// (i / (block * P)) * block + i mod block.
#include <cinttypes>
#include <cstring>

#include "splitc/runtime.hpp"

namespace hpam::splitc {
namespace {

uint64_t div_up(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

bool well_formed(const splitc_spread_t* a) {
  return a && a->procs > 0 && a->block > 0 && a->elem_size > 0;
}

}  // namespace
}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

int splitc_spread_alloc(splitc_spread_t* a, uint64_t count, uint64_t elem_size, uint64_t block) {
  runtime* r = require("splitc_spread_alloc");
  if (!r) return SPLITC_ERR_STATE;
  if (!a || elem_size == 0)
    return fail(SPLITC_ERR_INVALID, "splitc_spread_alloc: %s",
                a ? "elem_size is 0" : "array is NULL");
  std::memset(a, 0, sizeof *a);
  const auto p = static_cast<uint64_t>(r->procs);
  a->count = count;
  a->elem_size = elem_size;
  a->block = block ? block : (count ? div_up(count, p) : 1);
  a->procs = r->procs;
  a->capacity = div_up(div_up(count, a->block), p) * a->block;
  if (a->capacity > (SIZE_MAX >> 1) / elem_size)
    return fail(SPLITC_ERR_NO_MEMORY,
                "splitc_spread_alloc: %" PRIu64 " elements of %" PRIu64 " bytes do not fit", count,
                elem_size);
  a->local = splitc_all_alloc(a->capacity * elem_size);
  if (!a->local) return SPLITC_ERR_NO_MEMORY;
  return SPLITC_OK;
}

int splitc_spread_free(splitc_spread_t* a) {
  if (!a || !a->local)
    return fail(SPLITC_ERR_INVALID, "splitc_spread_free: not an allocated array");
  const int e = splitc_all_free(a->local);
  if (!e) a->local = nullptr;
  return e;
}

int splitc_spread_owner(const splitc_spread_t* a, uint64_t i) {
  if (!well_formed(a) || i >= a->count) return -1;
  return static_cast<int>((i / a->block) % static_cast<uint64_t>(a->procs));
}

splitc_gptr_t splitc_spread_at(const splitc_spread_t* a, uint64_t i) {
  const int owner = splitc_spread_owner(a, i);
  if (owner < 0) {
    fail(SPLITC_ERR_RANGE,
         well_formed(a)
             ? "spread array index %" PRIu64 " out of range: the array has %" PRIu64 " elements"
             : "spread array index %" PRIu64 " into an array that is not allocated (%" PRIu64
               " elements)",
         i, a ? a->count : 0);
    return splitc_gptr_t{-1, 0, 0};
  }
  const uint64_t per_round = a->block * static_cast<uint64_t>(a->procs);
  const uint64_t k = i / per_round * a->block + i % a->block;
  return splitc_toglobal(owner, static_cast<const std::byte*>(a->local) + k * a->elem_size);
}

uint64_t splitc_spread_local_count(const splitc_spread_t* a, int proc) {
  if (!well_formed(a) || proc < 0 || proc >= a->procs) return 0;
  const uint64_t blocks = div_up(a->count, a->block);
  const auto p = static_cast<uint64_t>(a->procs), q = static_cast<uint64_t>(proc);
  if (q >= blocks) return 0;
  const uint64_t mine = (blocks - 1 - q) / p + 1;  // blocks q, q + P, ... below `blocks`
  const bool has_last = (blocks - 1) % p == q;     // the last block may be short
  return mine * a->block - (has_last ? blocks * a->block - a->count : 0);
}

uint64_t splitc_spread_global_index(const splitc_spread_t* a, int proc, uint64_t k) {
  if (!well_formed(a)) return 0;
  return (k / a->block * static_cast<uint64_t>(a->procs) + static_cast<uint64_t>(proc)) * a->block +
         k % a->block;
}

}  // extern "C"
