// Remote access: blocking reads and writes, split-phase gets and puts
// completed by splitc_sync, and remote atomics. Every call resolves its
// global pointer first (no byte moves for a bad one), then issues MPI RMA on
// the heap window: over btl/hpam with osc/rdma, puts and gets are Hamlyn
// deposits and the atomics hybrid deposit operations.
#include <climits>
#include <cstring>

#include "splitc/runtime.hpp"

namespace hpam::splitc {

// MPI counts are int: bulk data goes in chunks below 2 GiB.
constexpr size_t chunk = size_t{1} << 30;

namespace {

// Issues op(offset, n) over [0, len) in chunks below 2 GiB.
template <class Op>
int chunked(size_t len, const char* call, Op op) {
  for (size_t done = 0; done < len;) {
    const int n = static_cast<int>(len - done < chunk ? len - done : chunk);
    if (int e = check_mpi(op(done, n), call); e) return e;
    done += static_cast<size_t>(n);
  }
  return SPLITC_OK;
}

}  // namespace

int rma_put(runtime& r, const void* src, size_t len, int proc, MPI_Aint disp) {
  const auto* s = static_cast<const std::byte*>(src);
  const int e = chunked(len, "MPI_Put", [&](size_t at, int n) {
    return MPI_Put(s + at, n, MPI_BYTE, proc, disp + static_cast<MPI_Aint>(at), n, MPI_BYTE, r.win);
  });
  r.outstanding = true;
  r.stats.bytes_written += len;
  return e;
}

int rma_get(runtime& r, void* dst, size_t len, int proc, MPI_Aint disp) {
  auto* d = static_cast<std::byte*>(dst);
  const int e = chunked(len, "MPI_Get", [&](size_t at, int n) {
    return MPI_Get(d + at, n, MPI_BYTE, proc, disp + static_cast<MPI_Aint>(at), n, MPI_BYTE, r.win);
  });
  r.outstanding = true;
  r.stats.bytes_read += len;
  return e;
}

int flush_all(runtime& r) {
  if (!r.outstanding) return SPLITC_OK;
  r.stats.flushes++;
  if (int e = check_mpi(MPI_Win_flush_all(r.win), "MPI_Win_flush_all"); e) return e;
  r.outstanding = false;
  r.stage_used = 0;  // every staged value has been delivered
  return SPLITC_OK;
}

int flush(runtime& r, int proc) {
  r.stats.flushes++;
  return check_mpi(MPI_Win_flush(proc, r.win), "MPI_Win_flush");
}

int stage_value(runtime& r, uint64_t value, const uint64_t** slot) {
  if (r.stage_used == r.stage.size())
    if (int e = flush_all(r); e) return e;
  r.stage[r.stage_used] = value;
  *slot = &r.stage[r.stage_used++];
  return SPLITC_OK;
}

void progress(runtime& r) {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, r.probe_comm, &flag, MPI_STATUS_IGNORE);
}

namespace {

// Resolves g for len bytes; on success *rp is the runtime.
int prepare(const char* fn, splitc_gptr_t g, size_t len, runtime** rp, MPI_Aint* disp) {
  runtime* r = require(fn);
  if (!r) return SPLITC_ERR_STATE;
  *rp = r;
  return resolve(*r, g, len, disp);
}

int prepare_atomic(const char* fn, splitc_gptr_t g, runtime** rp, MPI_Aint* disp) {
  if (int e = prepare(fn, g, sizeof(uint64_t), rp, disp); e) return e;
  if (g.addr % alignof(uint64_t))
    return fail(SPLITC_ERR_BAD_GPTR, "%s: address 0x%llx on processor %d is not 8-byte aligned", fn,
                static_cast<unsigned long long>(g.addr), g.proc);
  (*rp)->stats.atomics++;
  (*rp)->outstanding = true;
  return SPLITC_OK;
}

int put_value(const char* fn, splitc_gptr_t dst, uint64_t value, size_t len) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  const uint64_t* slot = nullptr;
  if (int e = prepare(fn, dst, len, &r, &disp); e) return e;
  if (int e = stage_value(*r, value, &slot); e) return e;
  r->stats.puts++;
  return rma_put(*r, slot, len, dst.proc, disp);
}

}  // namespace
}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

int splitc_bulk_read(void* dst, splitc_gptr_t src, size_t len) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare("splitc_bulk_read", src, len, &r, &disp); e) return e;
  r->stats.reads++;
  if (int e = rma_get(*r, dst, len, src.proc, disp); e) return e;
  return flush(*r, src.proc);
}

int splitc_bulk_write(splitc_gptr_t dst, const void* src, size_t len) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare("splitc_bulk_write", dst, len, &r, &disp); e) return e;
  r->stats.writes++;
  if (int e = rma_put(*r, src, len, dst.proc, disp); e) return e;
  return flush(*r, dst.proc);
}

int splitc_read_u64(uint64_t* dst, splitc_gptr_t src) {
  return splitc_bulk_read(dst, src, 8);
}
int splitc_read_f64(double* dst, splitc_gptr_t src) {
  return splitc_bulk_read(dst, src, 8);
}
int splitc_write_u64(splitc_gptr_t dst, uint64_t v) {
  return splitc_bulk_write(dst, &v, 8);
}
int splitc_write_f64(splitc_gptr_t dst, double v) {
  return splitc_bulk_write(dst, &v, 8);
}

int splitc_bulk_get(void* dst, splitc_gptr_t src, size_t len) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare("splitc_bulk_get", src, len, &r, &disp); e) return e;
  r->stats.gets++;
  return rma_get(*r, dst, len, src.proc, disp);
}

int splitc_bulk_put(splitc_gptr_t dst, const void* src, size_t len) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare("splitc_bulk_put", dst, len, &r, &disp); e) return e;
  r->stats.puts++;
  return rma_put(*r, src, len, dst.proc, disp);
}

int splitc_get_u64(uint64_t* dst, splitc_gptr_t src) {
  return splitc_bulk_get(dst, src, 8);
}
int splitc_get_f64(double* dst, splitc_gptr_t src) {
  return splitc_bulk_get(dst, src, 8);
}
int splitc_put_u64(splitc_gptr_t dst, uint64_t v) {
  return put_value("splitc_put_u64", dst, v, 8);
}

int splitc_put_f64(splitc_gptr_t dst, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return put_value("splitc_put_f64", dst, bits, 8);
}

int splitc_sync(void) {
  runtime* r = require("splitc_sync");
  return r ? flush_all(*r) : SPLITC_ERR_STATE;
}

int splitc_fetch_add_u64(uint64_t* old, splitc_gptr_t dst, uint64_t value) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare_atomic("splitc_fetch_add_u64", dst, &r, &disp); e) return e;
  const int rc = MPI_Fetch_and_op(&value, old, MPI_UINT64_T, dst.proc, disp, MPI_SUM, r->win);
  if (int e = check_mpi(rc, "MPI_Fetch_and_op"); e) return e;
  return flush(*r, dst.proc);
}

int splitc_cas_u64(uint64_t* old, splitc_gptr_t dst, uint64_t expected, uint64_t desired) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare_atomic("splitc_cas_u64", dst, &r, &disp); e) return e;
  const int rc =
      MPI_Compare_and_swap(&desired, &expected, old, MPI_UINT64_T, dst.proc, disp, r->win);
  if (int e = check_mpi(rc, "MPI_Compare_and_swap"); e) return e;
  return flush(*r, dst.proc);
}

int splitc_atomic_read_u64(uint64_t* dst, splitc_gptr_t src) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  if (int e = prepare_atomic("splitc_atomic_read_u64", src, &r, &disp); e) return e;
  const int rc = MPI_Fetch_and_op(nullptr, dst, MPI_UINT64_T, src.proc, disp, MPI_NO_OP, r->win);
  if (int e = check_mpi(rc, "MPI_Fetch_and_op"); e) return e;
  return flush(*r, src.proc);
}

int splitc_add_u64(splitc_gptr_t dst, uint64_t value) {
  runtime* r = nullptr;
  MPI_Aint disp = 0;
  const uint64_t* slot = nullptr;
  if (int e = prepare_atomic("splitc_add_u64", dst, &r, &disp); e) return e;
  if (int e = stage_value(*r, value, &slot); e) return e;
  r->outstanding = true;  // stage_value may have flushed
  const int rc =
      MPI_Accumulate(slot, 1, MPI_UINT64_T, dst.proc, disp, 1, MPI_UINT64_T, MPI_SUM, r->win);
  return check_mpi(rc, "MPI_Accumulate");
}

}  // extern "C"
