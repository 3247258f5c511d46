/*
 * hpam_splitc.h — a small Split-C style global address space on MPI-3 RMA.
 *
 * Split-C (Culler et al., Supercomputing '93) gives every processor a share
 * of one global address space: a global pointer names (processor, local
 * address), spread arrays lay elements over all processors, and remote
 * accesses come in three kinds:
 *
 *   blocking       x = *g                splitc_read_u64, splitc_bulk_read
 *   split-phase    x := *g ... sync()    splitc_get_u64, splitc_put_u64, splitc_bulk_get/put
 *   signaling      *g :- x ... store_sync(bytes) at the owner
 *                                         splitc_store_u64/u32, splitc_bulk_store
 *
 * Here the global address space is one symmetric heap per processor exposed
 * through one MPI_Win_create window (passive target, lock_all for the whole
 * run), so every remote access is an MPI_Put / MPI_Get / accumulate and runs
 * over whatever transport carries MPI RMA: over btl/hpam with osc/rdma these
 * are Hamlyn deposits and hybrid deposit operations. Collectives (barrier,
 * reductions, scans, broadcast) are MPI collectives.
 *
 * Signaling stores: each store is an MPI_Put; the bytes stored to one
 * destination are counted and, once per batch (and before any wait), the
 * storer completes its puts to that destination (MPI_Win_flush) and adds the
 * batch's byte count to the destination's arrival counter with one
 * MPI_Accumulate(MPI_SUM). The owner's store_sync(n) polls its own counter;
 * no store costs a round trip of its own.
 *
 * Errors: every call returns SPLITC_OK or a negative SPLITC_ERR_*. A bad
 * global pointer (unknown processor, or an address range outside that
 * processor's heap) or an out-of-range spread index is refused before any
 * transfer, with a message naming the processor and the address or index
 * (splitc_last_error). By default an error also prints that message and ends
 * the job (MPI_Abort), as MPI's own default does; splitc_set_error_mode
 * (SPLITC_ERRORS_RETURN) makes calls return the code instead.
 *
 * Single-threaded: call from one thread per process.
 */
#ifndef HPAM_SPLITC_H
#define HPAM_SPLITC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  SPLITC_OK = 0,
  SPLITC_ERR_BAD_GPTR = -1, /* processor unknown or range outside its heap     */
  SPLITC_ERR_RANGE = -2,    /* spread array index out of range                 */
  SPLITC_ERR_INVALID = -3,  /* another argument is invalid                     */
  SPLITC_ERR_NO_MEMORY = -4,/* the symmetric heap is exhausted                 */
  SPLITC_ERR_MPI = -5,      /* an MPI call failed                              */
  SPLITC_ERR_STATE = -6     /* called before splitc_init or after finalize     */
};

enum splitc_error_mode { SPLITC_ERRORS_ABORT = 0, SPLITC_ERRORS_RETURN = 1 };

/* ---- set-up ------------------------------------------------------------ */

/* Initializes MPI if the program has not, allocates this processor's heap of
 * heap_bytes (0: 64 MiB) and exposes it in one window. Collective. */
int splitc_init(int* argc, char*** argv, size_t heap_bytes);
/* Completes everything outstanding, frees the window and the heap, and
 * finalizes MPI if splitc_init initialized it. Collective. */
int splitc_finalize(void);

int splitc_my_proc(void);
int splitc_procs(void);
double splitc_wtime(void);

void splitc_set_error_mode(enum splitc_error_mode mode);
const char* splitc_last_error(void);

/* ---- global pointers and the symmetric heap ---------------------------- */

typedef struct splitc_gptr {
  int32_t proc;  /* owning processor; -1 marks a pointer refused at creation */
  uint32_t pad_; /* zero                                                    */
  uint64_t addr; /* local address in proc's address space                   */
} splitc_gptr_t;

/* Collective: the same size on every processor, in the same order. Returns
 * memory at the same heap offset on every processor (aligned to 64 bytes,
 * zeroed), or NULL (SPLITC_ERR_NO_MEMORY). */
void* splitc_all_alloc(size_t bytes);
/* Collective: frees p and everything allocated after it (a stack). */
int splitc_all_free(void* p);

/* The object at local address `local` (inside this processor's heap), on
 * processor proc. A refused pointer has proc == -1 and fails when used. */
splitc_gptr_t splitc_toglobal(int proc, const void* local);
/* This processor's address of g, or NULL when g is on another processor. */
void* splitc_tolocal(splitc_gptr_t g);
/* g moved by `bytes` within its processor (Split-C global pointer arithmetic
 * on a local address). */
splitc_gptr_t splitc_gptr_add(splitc_gptr_t g, int64_t bytes);
/* Nonzero when [g.addr, g.addr + len) lies in processor g.proc's heap; a
 * question, not an error: reports nothing. */
int splitc_gptr_valid(splitc_gptr_t g, size_t len);

/* ---- spread arrays ----------------------------------------------------- */

/* Block-cyclic over all processors: blocks of `block` consecutive elements
 * are dealt to processors 0, 1, ..., P-1, 0, ... SPLITC_CYCLIC (1) deals
 * single elements; SPLITC_BLOCKED (0) gives each processor one block of
 * ceil(count / P). */
#define SPLITC_CYCLIC 1
#define SPLITC_BLOCKED 0

typedef struct splitc_spread {
  uint64_t count;      /* elements in the whole array                     */
  uint64_t elem_size;  /* bytes per element                               */
  uint64_t block;      /* elements per block                              */
  uint64_t capacity;   /* elements reserved on every processor            */
  void* local;         /* this processor's part (capacity elements)       */
  int32_t procs;       /* processors it is spread over                    */
  int32_t pad_;
} splitc_spread_t;

/* Collective. */
int splitc_spread_alloc(splitc_spread_t* a, uint64_t count, uint64_t elem_size, uint64_t block);
int splitc_spread_free(splitc_spread_t* a);
/* Global pointer to element i; refused (proc -1, error naming i) if i >= count. */
splitc_gptr_t splitc_spread_at(const splitc_spread_t* a, uint64_t i);
int splitc_spread_owner(const splitc_spread_t* a, uint64_t i);
/* Elements of the array held by processor proc, and the global index of its
 * k-th local element. */
uint64_t splitc_spread_local_count(const splitc_spread_t* a, int proc);
uint64_t splitc_spread_global_index(const splitc_spread_t* a, int proc, uint64_t k);

/* ---- blocking access --------------------------------------------------- */

int splitc_read_u64(uint64_t* dst, splitc_gptr_t src);
int splitc_read_f64(double* dst, splitc_gptr_t src);
int splitc_write_u64(splitc_gptr_t dst, uint64_t value);
int splitc_write_f64(splitc_gptr_t dst, double value);
int splitc_bulk_read(void* dst, splitc_gptr_t src, size_t len);
int splitc_bulk_write(splitc_gptr_t dst, const void* src, size_t len);

/* ---- split-phase access (:=), complete at splitc_sync ------------------ */

/* *dst is written by the time splitc_sync returns. */
int splitc_get_u64(uint64_t* dst, splitc_gptr_t src);
int splitc_get_f64(double* dst, splitc_gptr_t src);
/* The value is copied at the call. */
int splitc_put_u64(splitc_gptr_t dst, uint64_t value);
int splitc_put_f64(splitc_gptr_t dst, double value);
/* Bulk forms: src (or dst) must stay untouched until splitc_sync. */
int splitc_bulk_get(void* dst, splitc_gptr_t src, size_t len);
int splitc_bulk_put(splitc_gptr_t dst, const void* src, size_t len);
/* Waits for every get, put and atomic add this processor issued. */
int splitc_sync(void);

/* ---- signaling stores (:-) ---------------------------------------------- */

/* One-way: the storer learns nothing; the owner counts the bytes. Values are
 * copied at the call; the bulk form reads src until the next splitc_sync,
 * barrier or store synchronization. */
int splitc_store_u64(splitc_gptr_t dst, uint64_t value);
int splitc_store_u32(splitc_gptr_t dst, uint32_t value);
int splitc_bulk_store(splitc_gptr_t dst, const void* src, size_t len);
/* Waits until `bytes` more bytes have been stored into this processor since
 * the bytes the previous store synchronizations accounted for. */
int splitc_store_sync(uint64_t bytes);
/* Collective: returns when every store issued anywhere before it has
 * arrived, and accounts for all of them (a barrier as well). */
int splitc_all_store_sync(void);

/* ---- remote atomics (64-bit words) ------------------------------------- */

int splitc_fetch_add_u64(uint64_t* old, splitc_gptr_t dst, uint64_t value);
/* *old receives the previous value; the swap happened iff *old == expected. */
int splitc_cas_u64(uint64_t* old, splitc_gptr_t dst, uint64_t expected, uint64_t desired);
/* An atomic read: safe beside concurrent remote atomics on the same word. */
int splitc_atomic_read_u64(uint64_t* dst, splitc_gptr_t src);
/* Non-fetching add, complete at splitc_sync. */
int splitc_add_u64(splitc_gptr_t dst, uint64_t value);

/* ---- collectives --------------------------------------------------------- */

typedef enum splitc_type { SPLITC_INT, SPLITC_INT64, SPLITC_DOUBLE } splitc_type_t;
typedef enum splitc_op { SPLITC_SUM, SPLITC_MIN, SPLITC_MAX } splitc_op_t;

/* Completes this processor's outstanding accesses and stores, then waits
 * for every processor. */
int splitc_barrier(void);
/* Element-wise over all processors, result everywhere, in place. */
int splitc_all_reduce(void* inout, size_t count, splitc_type_t type, splitc_op_t op);
/* Inclusive prefix over processors 0..me, in place. */
int splitc_all_scan(void* inout, size_t count, splitc_type_t type, splitc_op_t op);
int splitc_broadcast(void* buf, size_t len, int root);

/* ---- statistics ---------------------------------------------------------- */

typedef struct splitc_stats {
  uint64_t reads, writes;          /* blocking accesses                          */
  uint64_t gets, puts;             /* split-phase accesses (bulk included)       */
  uint64_t stores;                 /* signaling stores issued                     */
  uint64_t atomics;                /* fetch-add, cas, atomic read, add            */
  uint64_t bytes_read, bytes_written; /* data moved by all of the above        */
  uint64_t flushes;                /* MPI_Win_flush / flush_all calls             */
  uint64_t notifications;          /* store batches announced to an owner        */
  uint64_t sync_polls;             /* reads of the own arrival counter in waits  */
  uint64_t coalesced_batches;      /* store batches sent as records in one put   */
  uint64_t bad_records;            /* coalesced stores refused (outside the heap) */
} splitc_stats_t;

void splitc_get_stats(splitc_stats_t* out);

#ifdef __cplusplus
}
#endif
#endif /* HPAM_SPLITC_H */
