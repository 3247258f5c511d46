// The Split-C runtime's state on one processor, and the helpers every part
// of the library shares: error reporting, global pointer resolution, the
// staging area for copied values, and completion (flush).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hpam_splitc.h"

namespace hpam::splitc {

// The first bytes of every processor's heap: words that other processors
// change with MPI atomics. Inside the window, outside what splitc_all_alloc
// hands out, so no global pointer can name them.
struct control_block {
  uint64_t arrived_bytes;  // signaling-store bytes announced to this processor (MPI_SUM by storers)
  uint64_t reserved[7];    // zero; keeps the user heap on its own cache line
};
static_assert(sizeof(control_block) == 64, "the user heap starts one cache line in");
static_assert(offsetof(control_block, arrived_bytes) == 0, "the arrival counter is the first word");

// Signaling stores to one destination not yet announced to it.
struct store_batch {
  uint64_t bytes = 0;  // bytes stored since the last announcement
  uint64_t ops = 0;    // stores since the last announcement
  uint64_t announced =
      0;  // origin of the last MPI_Accumulate: untouched until the next flush of this destination
};

// A coalesced store (a one-word signaling store: splitc_store_u32/u64) on its
// way to its owner: the bytes and where they go. Owners check every record
// before applying it.
struct store_record {
  uint64_t where;  // heap displacement | length (1..8) << 56
  uint64_t value;  // the bytes, in the low `length` bytes
};
static_assert(sizeof(store_record) == 16, "records travel as raw bytes");
constexpr unsigned record_length_shift = 56;

// Store coalescing (as osc/pt2pt aggregates puts for any transport): every
// processor has, in a window of its own, an inbox for each storer: a header
// (records arrived, accumulated by the storer after its puts completed;
// records applied, replaced by the owner) and a ring of records. One-word
// stores to another processor wait as records in the storer's outbox and go
// with its announcement (one MPI_Put, or two at the ring's wrap); the owner
// applies them to its heap whenever it polls its arrivals (and at every
// announcement of its own). A ring without room (its owner has not polled)
// is not waited for: the batch goes as one MPI_Put per store, as before.
struct inbox_header {
  uint64_t arrived;      // records the storer has delivered (MPI_SUM by the storer)
  uint64_t applied;      // records the owner has applied (MPI_REPLACE by the owner)
  uint64_t reserved[6];  // zero; the records start on their own cache line
};
static_assert(sizeof(inbox_header) == 64, "the ring starts one cache line in");
struct outbox {
  std::vector<store_record> records;  // waiting for the next announcement
  uint64_t record_bytes = 0;          // their bytes
  uint64_t sent = 0;                  // records delivered into the owner's ring so far
  uint64_t applied_seen = 0;          // the owner's `applied`, when last read
  uint64_t announced = 0;             // origin of the last arrival MPI_Accumulate
};

// Stores to one destination are announced after this many stores or bytes
// (and always before this processor waits for anything).
constexpr uint64_t batch_max_ops = 1024;
constexpr uint64_t batch_max_bytes = 256 * 1024;
// Words of the staging area for values copied at the call (puts, stores,
// adds); when it fills, everything outstanding is completed and it is reused.
constexpr size_t stage_words = 256 * 1024;
// A wait that lasts this long prints one warning naming what it waits for.
constexpr double wait_warn_seconds = 10.0;

struct runtime {
  MPI_Comm comm = MPI_COMM_NULL;        // collectives
  MPI_Comm probe_comm = MPI_COMM_NULL;  // never carries a message: MPI_Iprobe on it drives progress
  MPI_Win win = MPI_WIN_NULL;
  int me = 0, procs = 0;
  bool own_mpi = false;       // splitc_init called MPI_Init
  bool outstanding = false;   // an RMA operation was issued since the last flush_all
  std::byte* heap = nullptr;  // control_block, then the symmetric allocations
  size_t heap_size = 0;       // bytes, control block included
  size_t heap_top = sizeof(control_block);
  std::vector<size_t> alloc_stack;   // offsets handed out by splitc_all_alloc
  std::vector<uint64_t> base;        // every processor's heap address
  std::vector<uint64_t> size;        // every processor's heap size
  std::vector<store_batch> batch;    // per destination
  std::vector<uint64_t> sent_epoch;  // store bytes to each processor since the last all_store_sync
  uint64_t records_epoch = 0;        // records delivered into others' inboxes since then
  uint64_t expected = 0;             // arrivals all_store_sync has proved
  uint64_t accounted = 0;            // arrivals consumed by store_sync / all_store_sync
  std::vector<uint64_t> stage;
  size_t stage_used = 0;
  // Store coalescing (coalesce.cpp).
  MPI_Win inbox_win = MPI_WIN_NULL;       // every processor's inboxes, one per storer
  std::byte* inboxes = nullptr;           // mine: [procs] x (inbox_header, ring of ring_records)
  size_t inbox_bytes = 0;                 // one inbox: header and ring
  uint64_t ring_records = 0;              // records per ring (power of two)
  std::vector<outbox> out;                // per destination
  std::vector<uint64_t> applied;          // per storer: records of its ring I applied
  uint64_t applied_bytes = 0;             // bytes those records (and my stores to myself) brought
  std::vector<uint64_t> arrived_scratch;  // apply_inboxes: each storer's arrived count
  splitc_stats_t stats{};
};

// This processor's runtime, or nullptr before splitc_init / after finalize.
runtime* current();

// Records the message (prefixed "splitc: processor N: "), prints it and
// ends the job in SPLITC_ERRORS_ABORT mode; returns code otherwise.
int fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// SPLITC_OK, or fail(SPLITC_ERR_MPI) naming the call and MPI's error text.
int check_mpi(int rc, const char* call);
// The runtime, or fail(SPLITC_ERR_STATE) naming the calling function.
runtime* require(const char* fn);

// Window displacement of [g.addr, g.addr + len), or fail(SPLITC_ERR_BAD_GPTR)
// naming the processor, address and length.
int resolve(const runtime& r, splitc_gptr_t g, size_t len, MPI_Aint* disp);

// A copy of value in the staging area, valid until the next flush_all.
int stage_value(runtime& r, uint64_t value, const uint64_t** slot);
// Completes every operation this processor issued (MPI_Win_flush_all).
int flush_all(runtime& r);
// Completes every operation to proc (MPI_Win_flush).
int flush(runtime& r, int proc);
// Announces every pending store batch and completes everything outstanding:
// done before any wait, so no processor waits on stores another holds back.
int quiesce(runtime& r);
// Moves MPI's progress engine once (passive-target targets must).
void progress(runtime& r);

// Store coalescing (coalesce.cpp): the inbox window, made and freed with the
// heap's; a one-word store to myself, done at once; one to proc queued
// (returns the records now queued for it); the queued records delivered
// (called by announce, which then completes the heap window's puts to proc:
// a ring without room makes them direct puts, whose bytes *direct_bytes
// says); my inboxes applied to my heap.
int open_inboxes(runtime& r);
void close_inboxes(runtime& r);
void store_here(runtime& r, MPI_Aint disp, uint64_t value, size_t len);
size_t queue_record(runtime& r, int proc, MPI_Aint disp, uint64_t value, size_t len);
int deliver_records(runtime& r, int proc, uint64_t* direct_bytes);
int apply_inboxes(runtime& r);

// The typed MPI calls under the library, with 2 GiB chunking of bulk data.
int rma_put(runtime& r, const void* src, size_t len, int proc, MPI_Aint disp);
int rma_get(runtime& r, void* dst, size_t len, int proc, MPI_Aint disp);

}  // namespace hpam::splitc
