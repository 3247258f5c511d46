// The symmetric heap and global pointers: collective allocation at the same
// offset everywhere, translation between local and global addresses, and
// the check every remote access passes before any byte moves.
#include <cinttypes>
#include <cstring>

#include "splitc/runtime.hpp"

namespace hpam::splitc {

constexpr size_t alloc_align = 64;

namespace {

// The user part of processor p's heap: [lo, hi).
uint64_t heap_lo(const runtime& r, int p) {
  return r.base[p] + sizeof(control_block);
}
uint64_t heap_hi(const runtime& r, int p) {
  return r.base[p] + r.size[p];
}

bool in_heap(const runtime& r, splitc_gptr_t g, size_t len) {
  if (g.proc < 0 || g.proc >= r.procs) return false;
  const uint64_t lo = heap_lo(r, g.proc), hi = heap_hi(r, g.proc);
  return g.addr >= lo && g.addr <= hi && len <= hi - g.addr;
}

}  // namespace

int resolve(const runtime& r, splitc_gptr_t g, size_t len, MPI_Aint* disp) {
  if (g.proc == -1)
    return fail(SPLITC_ERR_BAD_GPTR,
                "use of a global pointer that was refused when it was made (address 0x%" PRIx64 ")",
                g.addr);
  if (g.proc < 0 || g.proc >= r.procs)
    return fail(SPLITC_ERR_BAD_GPTR,
                "bad global pointer (processor %d, address 0x%" PRIx64
                "): there are processors 0..%d",
                g.proc, g.addr, r.procs - 1);
  if (!in_heap(r, g, len))
    return fail(SPLITC_ERR_BAD_GPTR,
                "bad global pointer (processor %d, address 0x%" PRIx64
                ", %zu bytes): outside processor %d's heap [0x%" PRIx64 ", 0x%" PRIx64 ")",
                g.proc, g.addr, len, g.proc, heap_lo(r, g.proc), heap_hi(r, g.proc));
  *disp = static_cast<MPI_Aint>(g.addr - r.base[g.proc]);
  return SPLITC_OK;
}

namespace {

// Every processor must ask for the same size, or the heap stops being
// symmetric, and every one must have room; one small reduction checks both.
// It also orders everyone's zeroing of the new block before anyone's
// first store into it (each contribution is made after the memset).
int agree(runtime& r, uint64_t bytes, bool fits) {
  uint64_t v[3] = {bytes, ~bytes, fits ? 0u : 1u}, m[3];
  if (int e = check_mpi(MPI_Allreduce(v, m, 3, MPI_UINT64_T, MPI_MAX, r.comm), "MPI_Allreduce"); e)
    return e;
  if (m[0] != bytes || ~m[1] != bytes)
    return fail(SPLITC_ERR_INVALID,
                "splitc_all_alloc(%" PRIu64 ") is collective: processors asked for %" PRIu64
                " to %" PRIu64 " bytes",
                bytes, ~m[1], m[0]);
  if (m[2])
    return fail(SPLITC_ERR_NO_MEMORY,
                "splitc_all_alloc(%" PRIu64
                "): the heap is full on %s (%zu of %zu bytes used here; "
                "raise splitc_init's heap_bytes)",
                bytes, fits ? "another processor" : "this processor", r.heap_top, r.heap_size);
  return SPLITC_OK;
}

}  // namespace
}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

void* splitc_all_alloc(size_t bytes) {
  runtime* r = require("splitc_all_alloc");
  if (!r) return nullptr;
  const size_t at = (r->heap_top + alloc_align - 1) / alloc_align * alloc_align;
  const bool fits = at <= r->heap_size && bytes <= r->heap_size - at;
  if (fits) std::memset(r->heap + at, 0, bytes);
  if (agree(*r, bytes, fits)) return nullptr;
  r->alloc_stack.push_back(at);
  r->heap_top = at + bytes;
  return r->heap + at;
}

int splitc_all_free(void* p) {
  runtime* r = require("splitc_all_free");
  if (!r) return SPLITC_ERR_STATE;
  const auto at = static_cast<size_t>(static_cast<std::byte*>(p) - r->heap);
  size_t i = r->alloc_stack.size();
  while (i > 0 && r->alloc_stack[i - 1] != at) --i;
  if (!p || i == 0)
    return fail(SPLITC_ERR_INVALID, "splitc_all_free(%p): not an address splitc_all_alloc returned",
                p);
  // Others may still be storing into it: free only when everyone is done.
  if (int e = splitc_barrier(); e) return e;
  r->heap_top = at;
  r->alloc_stack.resize(i - 1);
  return SPLITC_OK;
}

splitc_gptr_t splitc_toglobal(int proc, const void* local) {
  splitc_gptr_t g{-1, 0, reinterpret_cast<uint64_t>(local)};
  runtime* r = require("splitc_toglobal");
  if (!r) return g;
  const auto* b = static_cast<const std::byte*>(local);
  if (proc < 0 || proc >= r->procs) {
    fail(SPLITC_ERR_BAD_GPTR, "splitc_toglobal: processor %d does not exist (processors 0..%d)",
         proc, r->procs - 1);
  } else if (b < r->heap + sizeof(control_block) || b >= r->heap + r->heap_size) {
    fail(SPLITC_ERR_BAD_GPTR, "splitc_toglobal: %p is not in this processor's heap [%p, %p)", local,
         static_cast<void*>(r->heap + sizeof(control_block)),
         static_cast<void*>(r->heap + r->heap_size));
  } else {
    g.proc = proc;
    g.addr = r->base[proc] + static_cast<uint64_t>(b - r->heap);
  }
  return g;
}

void* splitc_tolocal(splitc_gptr_t g) {
  runtime* r = current();
  MPI_Aint disp = 0;
  if (!r || g.proc != r->me) return nullptr;
  if (resolve(*r, g, 0, &disp)) return nullptr;
  return r->heap + disp;
}

splitc_gptr_t splitc_gptr_add(splitc_gptr_t g, int64_t bytes) {
  g.addr += static_cast<uint64_t>(bytes);
  return g;
}

int splitc_gptr_valid(splitc_gptr_t g, size_t len) {
  const runtime* r = current();
  return r && in_heap(*r, g, len);
}

}  // extern "C"
