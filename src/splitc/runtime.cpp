// Set-up and tear-down of the Split-C runtime, error reporting, statistics.
#include "splitc/runtime.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace hpam::splitc {
namespace {

runtime* the_runtime = nullptr;
splitc_error_mode error_mode = SPLITC_ERRORS_ABORT;
char last_error[512] = "";

constexpr size_t default_heap = size_t{64} << 20;
constexpr size_t page = 4096;

// Exposes the heap in one window, passive target for the whole run, and
// learns every processor's heap address and size.
int open_window(runtime& r) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_disp_unit", "true");
  int rc = MPI_Win_create(r.heap, static_cast<MPI_Aint>(r.heap_size), 1, info, r.comm, &r.win);
  MPI_Info_free(&info);
  if (int e = check_mpi(rc, "MPI_Win_create"); e) return e;
  if (int e = check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, r.win), "MPI_Win_lock_all"); e) return e;
  const uint64_t mine[2] = {reinterpret_cast<uint64_t>(r.heap), r.heap_size};
  std::vector<uint64_t> all(2 * static_cast<size_t>(r.procs));
  if (int e = check_mpi(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, r.comm),
                        "MPI_Allgather");
      e)
    return e;
  for (int p = 0; p < r.procs; ++p) {
    r.base[p] = all[2 * p];
    r.size[p] = all[2 * p + 1];
  }
  return SPLITC_OK;
}

int setup(runtime& r, size_t heap_bytes) {
  MPI_Comm_dup(MPI_COMM_WORLD, &r.comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &r.probe_comm);
  MPI_Comm_rank(r.comm, &r.me);
  MPI_Comm_size(r.comm, &r.procs);
  const size_t want = (heap_bytes ? heap_bytes : default_heap) + sizeof(control_block);
  r.heap_size = (want + page - 1) / page * page;
  void* m = mmap(nullptr, r.heap_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return fail(SPLITC_ERR_NO_MEMORY, "cannot map a heap of %zu bytes: %s", r.heap_size,
                std::strerror(errno));
  r.heap = static_cast<std::byte*>(m);  // zero-filled by the kernel
  r.base.assign(r.procs, 0);
  r.size.assign(r.procs, 0);
  r.batch.assign(r.procs, store_batch{});
  r.sent_epoch.assign(r.procs, 0);
  r.stage.assign(stage_words, 0);
  if (int e = open_window(r); e) return e;
  return open_inboxes(r);
}

void release(runtime& r) {
  close_inboxes(r);
  if (r.win != MPI_WIN_NULL) MPI_Win_free(&r.win);
  if (r.heap) munmap(r.heap, r.heap_size);
  if (r.comm != MPI_COMM_NULL) MPI_Comm_free(&r.comm);
  if (r.probe_comm != MPI_COMM_NULL) MPI_Comm_free(&r.probe_comm);
}

}  // namespace

runtime* current() {
  return the_runtime;
}

int fail(int code, const char* fmt, ...) {
  const int me = the_runtime ? the_runtime->me : -1;
  int n = std::snprintf(last_error, sizeof last_error, "splitc: processor %d: ", me);
  if (n < 0) n = 0;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(last_error + n, sizeof last_error - static_cast<size_t>(n), fmt, ap);
  va_end(ap);
  if (error_mode == SPLITC_ERRORS_ABORT) {
    std::fprintf(stderr, "%s\n", last_error);
    std::fflush(stderr);
    int up = 0;
    MPI_Initialized(&up);
    if (up) MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();
  }
  return code;
}

int check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return SPLITC_OK;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return fail(SPLITC_ERR_MPI, "%s failed: %s", call, text);
}

runtime* require(const char* fn) {
  if (!the_runtime) fail(SPLITC_ERR_STATE, "%s called outside splitc_init .. splitc_finalize", fn);
  return the_runtime;
}

}  // namespace hpam::splitc

using namespace hpam::splitc;

extern "C" {

int splitc_init(int* argc, char*** argv, size_t heap_bytes) {
  if (the_runtime) return fail(SPLITC_ERR_STATE, "splitc_init called twice");
  int up = 0;
  MPI_Initialized(&up);
  auto r = std::make_unique<runtime>();
  if (!up) {
    if (int e = check_mpi(MPI_Init(argc, argv), "MPI_Init"); e) return e;
    r->own_mpi = true;
  }
  if (int e = setup(*r, heap_bytes); e) {
    release(*r);
    return e;
  }
  the_runtime = r.release();
  return SPLITC_OK;
}

int splitc_finalize(void) {
  runtime* r = require("splitc_finalize");
  if (!r) return SPLITC_ERR_STATE;
  int e = quiesce(*r);
  if (!e) e = check_mpi(MPI_Barrier(r->comm), "MPI_Barrier");
  if (!e) e = check_mpi(MPI_Win_unlock_all(r->win), "MPI_Win_unlock_all");
  release(*r);
  const bool own = r->own_mpi;
  delete r;
  the_runtime = nullptr;
  if (own && !e) e = check_mpi(MPI_Finalize(), "MPI_Finalize");
  return e;
}

int splitc_my_proc(void) {
  return the_runtime ? the_runtime->me : -1;
}
int splitc_procs(void) {
  return the_runtime ? the_runtime->procs : 0;
}
double splitc_wtime(void) {
  return MPI_Wtime();
}
void splitc_set_error_mode(enum splitc_error_mode mode) {
  error_mode = mode;
}
const char* splitc_last_error(void) {
  return last_error;
}

void splitc_get_stats(splitc_stats_t* out) {
  if (!out) return;
  if (the_runtime)
    *out = the_runtime->stats;
  else
    std::memset(out, 0, sizeof *out);
}

}  // extern "C"
