// Signaling stores (Split-C `:-`) and their synchronization.
//
// A store is an MPI_Put into the owner's heap; the storer counts the bytes
// per destination. A batch is announced to its destination (after
// batch_max_ops stores or batch_max_bytes bytes, and before this processor
// waits for anything) by completing the puts to it (MPI_Win_flush) and then
// adding the batch's byte count to the destination's arrival counter with
// one MPI_Accumulate(MPI_SUM): over btl/hpam a hybrid deposit fetch-and-add
// on the owner's control block. The owner's store_sync(n) polls its own
// counter with MPI_Fetch_and_op(MPI_NO_OP); all_store_sync sums the bytes
// every processor stored to every other (MPI_Allreduce), which tells each
// owner exactly how many bytes the epoch brings it.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "splitc/runtime.hpp"

namespace hpam::splitc {
namespace {

int announce(runtime& r, int proc) {
  store_batch& b = r.batch[proc];
  uint64_t direct = 0;  // coalesced stores sent as direct puts (their ring was full)
  if (int e = deliver_records(r, proc, &direct); e) return e;
  b.bytes += direct;
  // Completes this batch's puts and the previous announcement (whose
  // origin word is about to be rewritten).
  if (int e = flush(r, proc); e) return e;
  b.ops = 0;
  if (int e = apply_inboxes(r); e) return e;  // keeps my rings drained while I store
  if (b.bytes == 0) return SPLITC_OK;         // all of it went as records
  b.announced = b.bytes;
  r.sent_epoch[proc] += b.bytes;
  b.bytes = b.ops = 0;
  r.stats.notifications++;
  r.outstanding = true;
  const int rc =
      MPI_Accumulate(&b.announced, 1, MPI_UINT64_T, proc, offsetof(control_block, arrived_bytes), 1,
                     MPI_UINT64_T, MPI_SUM, r.win);
  return check_mpi(rc, "MPI_Accumulate");
}

int account(runtime& r, int proc, uint64_t bytes) {
  store_batch& b = r.batch[proc];
  b.bytes += bytes;
  b.ops++;
  r.stats.stores++;
  if (b.ops >= batch_max_ops || b.bytes >= batch_max_bytes) return announce(r, proc);
  return SPLITC_OK;
}

// Stores len bytes from src (read until the next flush) to dst.
int store(const char* fn, splitc_gptr_t dst, const void* src, size_t len, bool copy_value) {
  runtime* r = require(fn);
  MPI_Aint disp = 0;
  if (!r) return SPLITC_ERR_STATE;
  if (int e = resolve(*r, dst, len, &disp); e) return e;
  if (copy_value) {  // one word: coalesced (coalesce.cpp)
    uint64_t value = 0;
    std::memcpy(&value, src, len);
    r->stats.stores++;
    r->stats.bytes_written += len;
    if (dst.proc == r->me) {
      store_here(*r, disp, value, len);
      return SPLITC_OK;
    }
    r->batch[dst.proc].ops++;
    if (queue_record(*r, dst.proc, disp, value, len) >= batch_max_ops)
      return announce(*r, dst.proc);
    return SPLITC_OK;
  }
  if (int e = rma_put(*r, src, len, dst.proc, disp); e) return e;
  return account(*r, dst.proc, len);
}

// This processor's arrival counter, read atomically through the window.
// Records in my inboxes are applied first; their bytes count as arrived.
int arrived(runtime& r, uint64_t* v) {
  r.stats.sync_polls++;
  if (int e = apply_inboxes(r); e) return e;
  r.outstanding = true;
  const int rc = MPI_Fetch_and_op(nullptr, v, MPI_UINT64_T, r.me, 0, MPI_NO_OP, r.win);
  if (int e = check_mpi(rc, "MPI_Fetch_and_op"); e) return e;
  if (int e = flush(r, r.me); e) return e;
  *v += r.applied_bytes;
  return SPLITC_OK;
}

// Polls until the arrival counter reaches target, driving MPI's progress
// (passive-target operations on this processor may need it).
int wait_arrived(runtime& r, uint64_t target, const char* fn) {
  const double start = MPI_Wtime();
  bool warned = false;
  for (uint64_t v = 0;;) {
    if (int e = arrived(r, &v); e) return e;
    if (v >= target) return SPLITC_OK;
    progress(r);
    if (!warned && MPI_Wtime() - start > wait_warn_seconds) {
      std::fprintf(stderr,
                   "splitc: processor %d: %s has waited %.0f s: %" PRIu64 " of %" PRIu64
                   " bytes have arrived\n",
                   r.me, fn, wait_warn_seconds, v - r.accounted, target - r.accounted);
      warned = true;
    }
  }
}

}  // namespace

int quiesce(runtime& r) {
  for (int p = 0; p < r.procs; ++p)
    if (r.batch[p].ops)
      if (int e = announce(r, p); e) return e;
  return flush_all(r);
}

}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

int splitc_store_u64(splitc_gptr_t dst, uint64_t v) {
  return store("splitc_store_u64", dst, &v, sizeof v, true);
}
int splitc_store_u32(splitc_gptr_t dst, uint32_t v) {
  return store("splitc_store_u32", dst, &v, sizeof v, true);
}
int splitc_bulk_store(splitc_gptr_t dst, const void* src, size_t len) {
  return store("splitc_bulk_store", dst, src, len, false);
}

int splitc_store_sync(uint64_t bytes) {
  runtime* r = require("splitc_store_sync");
  if (!r) return SPLITC_ERR_STATE;
  if (int e = quiesce(*r); e) return e;
  if (int e = wait_arrived(*r, r->accounted + bytes, "splitc_store_sync"); e) return e;
  r->accounted += bytes;
  return check_mpi(MPI_Win_sync(r->win), "MPI_Win_sync");
}

int splitc_all_store_sync(void) {
  runtime* r = require("splitc_all_store_sync");
  if (!r) return SPLITC_ERR_STATE;
  if (int e = quiesce(*r); e) return e;
  // Every owner's total needs every storer's contribution, made after its
  // stores completed: nobody leaves before everybody's stores are in. One
  // element more: the records anybody delivered this epoch.
  std::vector<uint64_t> mine(r->sent_epoch), total(r->sent_epoch.size() + 1);
  mine.push_back(r->records_epoch);
  const int rc =
      MPI_Allreduce(mine.data(), total.data(), r->procs + 1, MPI_UINT64_T, MPI_SUM, r->comm);
  if (int e = check_mpi(rc, "MPI_Allreduce"); e) return e;
  r->expected += total[r->me];
  if (int e = wait_arrived(*r, r->expected, "splitc_all_store_sync"); e) return e;
  r->accounted = r->expected;
  r->sent_epoch.assign(r->sent_epoch.size(), 0);
  r->records_epoch = 0;
  if (int e = check_mpi(MPI_Win_sync(r->win), "MPI_Win_sync"); e) return e;
  // A record is in place once its owner has applied it (wait_arrived, each
  // owner its own): nobody reads another's heap before every owner has.
  if (total[r->procs] == 0) return SPLITC_OK;
  return check_mpi(MPI_Barrier(r->comm), "MPI_Barrier");
}

}  // extern "C"
