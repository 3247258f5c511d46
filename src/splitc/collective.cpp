// Barrier, reductions, scans and broadcast: MPI collectives on the
// runtime's communicator. Each first announces pending stores and completes
// outstanding accesses, so a processor blocked in a collective never holds
// back what another processor waits for in store_sync.
#include <climits>

#include "splitc/runtime.hpp"

namespace hpam::splitc {
namespace {

int to_mpi(splitc_type_t t, splitc_op_t o, MPI_Datatype* dt, MPI_Op* op) {
  switch (t) {
    case SPLITC_INT:
      *dt = MPI_INT;
      break;
    case SPLITC_INT64:
      *dt = MPI_INT64_T;
      break;
    case SPLITC_DOUBLE:
      *dt = MPI_DOUBLE;
      break;
    default:
      return fail(SPLITC_ERR_INVALID, "unknown splitc_type_t %d", static_cast<int>(t));
  }
  switch (o) {
    case SPLITC_SUM:
      *op = MPI_SUM;
      break;
    case SPLITC_MIN:
      *op = MPI_MIN;
      break;
    case SPLITC_MAX:
      *op = MPI_MAX;
      break;
    default:
      return fail(SPLITC_ERR_INVALID, "unknown splitc_op_t %d", static_cast<int>(o));
  }
  return SPLITC_OK;
}

// The runtime, quiesced, with the MPI type and op of (t, o).
runtime* enter(const char* fn, size_t count, splitc_type_t t, splitc_op_t o, MPI_Datatype* dt,
               MPI_Op* op, int* err) {
  runtime* r = require(fn);
  *err = r ? SPLITC_OK : SPLITC_ERR_STATE;
  if (!*err && count > INT_MAX)
    *err = fail(SPLITC_ERR_INVALID, "%s: count %zu above INT_MAX", fn, count);
  if (!*err) *err = to_mpi(t, o, dt, op);
  if (!*err) *err = quiesce(*r);
  return *err ? nullptr : r;
}

using combine_fn = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

// MPI_Allreduce or MPI_Scan in place over the runtime's communicator.
int combine(const char* fn, combine_fn mpi, const char* mpi_name, void* inout, size_t count,
            splitc_type_t type, splitc_op_t op) {
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  MPI_Op mop = MPI_OP_NULL;
  int e = SPLITC_OK;
  runtime* r = enter(fn, count, type, op, &dt, &mop, &e);
  if (!r) return e;
  return check_mpi(mpi(MPI_IN_PLACE, inout, static_cast<int>(count), dt, mop, r->comm), mpi_name);
}

}  // namespace
}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

int splitc_barrier(void) {
  runtime* r = require("splitc_barrier");
  if (!r) return SPLITC_ERR_STATE;
  if (int e = quiesce(*r); e) return e;
  MPI_Win_sync(r->win);
  if (int e = check_mpi(MPI_Barrier(r->comm), "MPI_Barrier"); e) return e;
  return check_mpi(MPI_Win_sync(r->win), "MPI_Win_sync");
}

int splitc_all_reduce(void* inout, size_t count, splitc_type_t type, splitc_op_t op) {
  return combine("splitc_all_reduce", MPI_Allreduce, "MPI_Allreduce", inout, count, type, op);
}

int splitc_all_scan(void* inout, size_t count, splitc_type_t type, splitc_op_t op) {
  return combine("splitc_all_scan", MPI_Scan, "MPI_Scan", inout, count, type, op);
}

int splitc_broadcast(void* buf, size_t len, int root) {
  int e = SPLITC_OK;
  MPI_Datatype dt = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  runtime* r = enter("splitc_broadcast", len, SPLITC_INT, SPLITC_SUM, &dt, &op, &e);
  if (!r) return e;
  if (root < 0 || root >= r->procs)
    return fail(SPLITC_ERR_INVALID, "splitc_broadcast: root %d is not a processor (0..%d)", root,
                r->procs - 1);
  return check_mpi(MPI_Bcast(buf, static_cast<int>(len), MPI_BYTE, root, r->comm), "MPI_Bcast");
}

}  // extern "C"
