// forged_records.cc — a hostile storer in Split-C's store coalescing
// (src/splitc/coalesce.cpp), under mpirun over any transport. Processor 1
// writes raw records into processor 0's inbox through the library's own
// delivery (its outbox and the inbox window), as a buggy or hostile peer
// could: lengths 0, 9 and 255, displacements into the control block, across
// and past the heap's end, far outside it and overflowing; a truncated batch
// (more records announced than delivered) after the ring has wrapped, whose
// slots hold an earlier lap's records; and forged counts (one going back,
// one far beyond the ring). Processor 0 must refuse and count every bad
// record (splitc_stats_t::bad_records), apply every good one of the same
// batch, and change no other byte of its heap. Prints "forged_records: ok".
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "hpam_splitc.h"
#include "splitc/runtime.hpp"

using namespace hpam::splitc;

namespace {

int me = 0, failed = 0;

#define CHECK(cond, ...)                                                             \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "forged_records: processor %d: line %d: ", me, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fprintf(stderr, "\n");                                                    \
      failed++;                                                                      \
    }                                                                                \
  } while (0)

constexpr int owner = 0, storer = 1;
constexpr uint64_t array_words = 64;

store_record record(uint64_t disp, uint64_t len, uint64_t value) {
  return store_record{disp | (len << record_length_shift), value};
}
uint64_t value_of(uint64_t i) {
  return i * 0x9e3779b97f4a7c15ull + 1;
}

// The storer's side: recs into the owner's ring as one delivery (the
// library's put and announcement), then `extra` more records announced that
// were never delivered. Their bytes are not counted as stored bytes, so
// all_store_sync waits for none of them.
void deliver(runtime& r, const std::vector<store_record>& recs, uint64_t extra = 0) {
  outbox& o = r.out[owner];
  if (!recs.empty()) {
    o.records = recs;
    o.record_bytes = 0;
    uint64_t direct = 0;
    const uint64_t batches = r.stats.coalesced_batches;
    CHECK(deliver_records(r, owner, &direct) == SPLITC_OK, "deliver_records");
    CHECK(direct == 0 && r.stats.coalesced_batches == batches + 1, "delivered as one batch");
  }
  if (extra == 0) return;
  const MPI_Aint arrived = static_cast<MPI_Aint>(r.inbox_bytes) * r.me +
                           static_cast<MPI_Aint>(offsetof(inbox_header, arrived));
  MPI_Accumulate(&extra, 1, MPI_UINT64_T, owner, arrived, 1, MPI_UINT64_T, MPI_SUM, r.inbox_win);
  MPI_Win_flush(owner, r.inbox_win);
  o.sent += extra;  // where a storer that believes it delivered them goes on
}

// One round: the storer delivers (inside step), then the owner polls its
// inboxes once (store_sync of no bytes) and returns the records it refused.
template <typename Step>
uint64_t poll_round(runtime& r, Step step) {
  if (me == storer) step();
  MPI_Barrier(MPI_COMM_WORLD);
  splitc_stats_t before, after;
  splitc_get_stats(&before);
  if (me == owner) CHECK(splitc_store_sync(0) == SPLITC_OK, "store_sync");
  splitc_get_stats(&after);
  MPI_Barrier(MPI_COMM_WORLD);
  return after.bad_records - before.bad_records;
}

// The owner's heap, but for the words named, must equal snapshot.
void heap_unchanged(const runtime& r, const std::vector<std::byte>& snapshot,
                    const std::vector<uint64_t>& except, const char* what) {
  for (size_t at = 0; at < r.heap_size; at += 8) {
    bool named = false;
    for (uint64_t d : except) named |= d == at;
    if (!named && std::memcmp(r.heap + at, snapshot.data() + at, 8) != 0) {
      CHECK(false, "%s: heap word at displacement %zu changed", what, at);
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (splitc_init(&argc, &argv, 1 << 20) != SPLITC_OK) return 1;
  runtime& r = *current();
  me = r.me;
  auto* a = static_cast<uint64_t*>(splitc_all_alloc(array_words * 8));
  const uint64_t ring = r.ring_records;
  auto* b = static_cast<uint64_t*>(splitc_all_alloc(ring * 8));
  MPI_Aint a_disp = 0, b_disp = 0;
  resolve(r, splitc_toglobal(owner, a), array_words * 8, &a_disp);
  resolve(r, splitc_toglobal(owner, b), ring * 8, &b_disp);
  const uint64_t A = static_cast<uint64_t>(a_disp), B = static_cast<uint64_t>(b_disp);
  const uint64_t end = r.heap_size;  // the same on every processor
  for (uint64_t i = 0; i < array_words; ++i) a[i] = 0xA5A5A5A5A5A5A5A5ull ^ i;
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::byte> snapshot(r.heap, r.heap + r.heap_size);

  // 1. Malformed records inside one batch, between good ones.
  const std::vector<store_record> batch = {
      record(A, 8, value_of(0)),               // good
      record(A + 8, 0, value_of(1)),           // length 0
      record(A + 16, 9, value_of(2)),          // longer than a word
      record(A + 24, 255, value_of(3)),        // the largest length field
      record(A + 32, 8, value_of(4)),          // good
      record(0, 8, value_of(5)),               // the control block's arrival counter
      record(56, 8, value_of(6)),              // the control block's last word
      record(end - 4, 8, value_of(7)),         // across the heap's end
      record(end, 1, value_of(8)),             // just past it
      record(uint64_t{1} << 55, 8, 9),         // far outside it
      record((uint64_t{1} << 56) - 4, 8, 10),  // displacement + length overflows
      record(A + 40, 4, value_of(11)),         // good (a 4-byte store)
      record(end - 8, 8, value_of(12)),        // good: the heap's last word
  };
  uint64_t bad = poll_round(r, [&] { deliver(r, batch); });
  if (me == owner) {
    CHECK(bad == 9, "malformed batch: %" PRIu64 " records refused, want 9", bad);
    CHECK(a[0] == value_of(0) && a[4] == value_of(4), "good records of the batch landed");
    uint64_t want5 = 0xA5A5A5A5A5A5A5A5ull ^ 5;
    const uint64_t v11 = value_of(11);
    std::memcpy(&want5, &v11, 4);
    CHECK(a[5] == want5, "the 4-byte record wrote 4 bytes: %016" PRIx64, a[5]);
    uint64_t last = 0;
    std::memcpy(&last, r.heap + end - 8, 8);
    CHECK(last == value_of(12), "the heap's last word");
    heap_unchanged(r, snapshot, {A, A + 32, A + 40, end - 8}, "malformed batch");
  }

  // 2. Good records until the ring has wrapped: record i sets b[i % ring].
  const uint64_t total = ring + ring / 2;
  for (uint64_t first = 0; first < total; first += batch_max_ops) {
    bad = poll_round(r, [&] {
      std::vector<store_record> recs;
      for (uint64_t i = first; i < first + batch_max_ops && i < total; ++i)
        recs.push_back(record(B + (i % ring) * 8, 8, value_of(i)));
      deliver(r, recs);
    });
    CHECK(bad == 0, "good records refused: %" PRIu64, bad);
  }
  if (me == owner) {
    for (uint64_t k = 0; k < ring; ++k) {
      const uint64_t want = value_of(k < total - ring ? k + ring : k);
      if (b[k] != want) {
        CHECK(false, "b[%" PRIu64 "] = %016" PRIx64 ", want %016" PRIx64, k, b[k], want);
        break;
      }
    }
    std::memset(b, 0, ring * 8);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // 3. A truncated batch: 10 records delivered, 100 announced. The 90 slots
  // after them hold the first lap's records: none may apply again.
  snapshot.assign(r.heap, r.heap + r.heap_size);
  bad = poll_round(r, [&] {
    std::vector<store_record> recs;
    for (uint64_t i = 0; i < 10; ++i) recs.push_back(record(A + 48 + (i % 2) * 8, 8, value_of(i)));
    deliver(r, recs, 90);
  });
  if (me == owner) {
    CHECK(bad == 90, "truncated batch: %" PRIu64 " records refused, want 90", bad);
    CHECK(a[6] == value_of(8) && a[7] == value_of(9), "its delivered records landed");
    heap_unchanged(r, snapshot, {A + 48, A + 56}, "truncated batch");
  }

  // 4. Forged counts: one going back (nothing happens), then one far beyond
  // the ring (its slots are empty: at most a ring's worth refused per poll).
  snapshot.assign(r.heap, r.heap + r.heap_size);
  bad = poll_round(r, [&] { deliver(r, {}, static_cast<uint64_t>(-50)); });
  if (me == owner) CHECK(bad == 0, "a count going back: %" PRIu64 " refused, want 0", bad);
  bad = poll_round(r, [&] { deliver(r, {}, uint64_t{1} << 40); });
  if (me == owner) {
    CHECK(bad == ring, "a count beyond the ring: %" PRIu64 " refused, want %" PRIu64, bad, ring);
    heap_unchanged(r, snapshot, {}, "forged counts");
  }

  int all = 0;
  MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  splitc_finalize();
  if (me == 0 && all == 0) std::printf("forged_records: ok\n");
  return all == 0 ? 0 : 1;
}
