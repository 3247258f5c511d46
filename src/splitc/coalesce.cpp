// Store coalescing: one-word signaling stores to another processor travel
// as records, many per MPI_Put, into the owner's inbox for this storer, and
// the owner applies them to its heap when it polls its arrivals
// (runtime.hpp: store_record, inbox_header). Over any transport this turns
// a put per word into a put per batch, as osc/pt2pt's aggregation does for
// the transports it runs on. A storer never waits for room: a full ring
// makes the batch direct puts. The owner checks every record (length,
// inside its user heap) before applying it; a bad one is refused and
// counted (splitc_stats_t::bad_records), the others apply. An applied slot
// is zeroed (a record of length 0, refused), so a storer that announces
// more records than it delivered (a truncated batch, a forged count) finds
// the rest refused, never an earlier lap's records applied again.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "splitc/runtime.hpp"

namespace hpam::splitc {
namespace {

constexpr uint64_t max_ring_records = 16384;          // records per ring (256 KiB)
constexpr size_t all_rings_bytes = size_t{16} << 20;  // rings of all storers together, at most

MPI_Aint inbox_at(const runtime& r, int storer) {
  return static_cast<MPI_Aint>(r.inbox_bytes) * storer;
}
MPI_Aint arrived_at(const runtime& r, int storer) {
  return inbox_at(r, storer) + static_cast<MPI_Aint>(offsetof(inbox_header, arrived));
}
MPI_Aint applied_at(const runtime& r, int storer) {
  return inbox_at(r, storer) + static_cast<MPI_Aint>(offsetof(inbox_header, applied));
}
MPI_Aint record_at(const runtime& r, int storer, uint64_t index) {
  return inbox_at(r, storer) +
         static_cast<MPI_Aint>(sizeof(inbox_header) +
                               (index % r.ring_records) * sizeof(store_record));
}

// Whether the owner may apply rec to its heap: 1..8 bytes inside the user heap.
bool well_formed(const runtime& r, const store_record& rec, size_t& len, uint64_t& disp) {
  len = static_cast<size_t>(rec.where >> record_length_shift);
  disp = rec.where & ((uint64_t{1} << record_length_shift) - 1);
  return len >= 1 && len <= sizeof rec.value && disp >= sizeof(control_block) &&
         disp <= r.heap_size && len <= r.heap_size - disp;
}

// Delivers the queued records into proc's ring (one put, two at the wrap),
// completes them, then announces how many arrived.
int put_records(runtime& r, int proc, outbox& o) {
  const uint64_t n = o.records.size();
  const uint64_t first = std::min<uint64_t>(n, r.ring_records - o.sent % r.ring_records);
  const int part[2] = {static_cast<int>(first * sizeof(store_record)),
                       static_cast<int>((n - first) * sizeof(store_record))};
  const uint64_t from[2] = {0, first};
  for (int i = 0; i < 2; ++i) {
    if (part[i] == 0) continue;
    const int rc = MPI_Put(o.records.data() + from[i], part[i], MPI_BYTE, proc,
                           record_at(r, r.me, o.sent + from[i]), part[i], MPI_BYTE, r.inbox_win);
    if (int e = check_mpi(rc, "MPI_Put"); e) return e;
  }
  if (int e = check_mpi(MPI_Win_flush(proc, r.inbox_win), "MPI_Win_flush"); e) return e;
  o.announced = n;
  const int rc = MPI_Accumulate(&o.announced, 1, MPI_UINT64_T, proc, arrived_at(r, r.me), 1,
                                MPI_UINT64_T, MPI_SUM, r.inbox_win);
  if (int e = check_mpi(rc, "MPI_Accumulate"); e) return e;
  o.sent += n;
  return check_mpi(MPI_Win_flush(proc, r.inbox_win), "MPI_Win_flush");  // o.announced free again
}

// The queued records as one MPI_Put each on the heap window (completed by
// the caller's flush).
int put_directly(runtime& r, int proc, outbox& o, uint64_t* bytes) {
  for (const store_record& rec : o.records) {
    const int len = static_cast<int>(rec.where >> record_length_shift);
    const MPI_Aint disp =
        static_cast<MPI_Aint>(rec.where & ((uint64_t{1} << record_length_shift) - 1));
    const int rc = MPI_Put(&rec.value, len, MPI_BYTE, proc, disp, len, MPI_BYTE, r.win);
    if (int e = check_mpi(rc, "MPI_Put"); e) return e;
    *bytes += static_cast<uint64_t>(len);
  }
  r.outstanding = true;
  return SPLITC_OK;
}

}  // namespace

int open_inboxes(runtime& r) {
  const uint64_t fit = all_rings_bytes / sizeof(store_record) / static_cast<uint64_t>(r.procs);
  r.ring_records = 1024;
  while (r.ring_records * 2 <= std::min(fit, max_ring_records)) r.ring_records *= 2;
  r.inbox_bytes = sizeof(inbox_header) + r.ring_records * sizeof(store_record);
  const size_t bytes = r.inbox_bytes * static_cast<size_t>(r.procs);
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return fail(SPLITC_ERR_NO_MEMORY, "cannot map store inboxes of %zu bytes: %s", bytes,
                std::strerror(errno));
  r.inboxes = static_cast<std::byte*>(m);  // zero-filled
  r.out.assign(static_cast<size_t>(r.procs), outbox{});
  for (outbox& o : r.out) o.records.reserve(batch_max_ops);
  r.applied.assign(static_cast<size_t>(r.procs), 0);
  int rc = MPI_Win_create(r.inboxes, static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, r.comm,
                          &r.inbox_win);
  if (int e = check_mpi(rc, "MPI_Win_create"); e) return e;
  return check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, r.inbox_win), "MPI_Win_lock_all");
}

void close_inboxes(runtime& r) {
  if (r.inbox_win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(r.inbox_win);
    MPI_Win_free(&r.inbox_win);
  }
  if (r.inboxes) munmap(r.inboxes, r.inbox_bytes * static_cast<size_t>(r.procs));
  r.inboxes = nullptr;
}

void store_here(runtime& r, MPI_Aint disp, uint64_t value, size_t len) {
  std::memcpy(r.heap + disp, &value, len);
  r.applied_bytes += len;
  r.sent_epoch[r.me] += len;
}

size_t queue_record(runtime& r, int proc, MPI_Aint disp, uint64_t value, size_t len) {
  outbox& o = r.out[proc];
  o.records.push_back(
      store_record{static_cast<uint64_t>(disp) | (uint64_t{len} << record_length_shift), value});
  o.record_bytes += len;
  return o.records.size();
}

int deliver_records(runtime& r, int proc, uint64_t* direct_bytes) {
  outbox& o = r.out[proc];
  if (o.records.empty()) return SPLITC_OK;
  const uint64_t n = o.records.size();
  if (o.sent + n - o.applied_seen > r.ring_records) {  // what the owner has applied since
    uint64_t seen = 0;
    const int rc = MPI_Fetch_and_op(nullptr, &seen, MPI_UINT64_T, proc, applied_at(r, r.me),
                                    MPI_NO_OP, r.inbox_win);
    if (int e = check_mpi(rc, "MPI_Fetch_and_op"); e) return e;
    if (int e = check_mpi(MPI_Win_flush(proc, r.inbox_win), "MPI_Win_flush"); e) return e;
    o.applied_seen = std::max(o.applied_seen, std::min(seen, o.sent));  // never more than was sent
  }
  int e = SPLITC_OK;
  if (o.sent + n - o.applied_seen <= r.ring_records) {
    e = put_records(r, proc, o);
    if (!e) {
      r.sent_epoch[proc] += o.record_bytes;
      r.records_epoch += n;
    }
    r.stats.coalesced_batches++;
  } else {
    e = put_directly(r, proc, o, direct_bytes);  // no room: no wait, as before coalescing
  }
  o.records.clear();
  o.record_bytes = 0;
  return e;
}

int apply_inboxes(runtime& r) {
  std::vector<uint64_t>& arrived = r.arrived_scratch;
  arrived.assign(static_cast<size_t>(r.procs), 0);
  for (int p = 0; p < r.procs; ++p) {
    if (p == r.me) continue;
    const int rc = MPI_Fetch_and_op(nullptr, &arrived[p], MPI_UINT64_T, r.me, arrived_at(r, p),
                                    MPI_NO_OP, r.inbox_win);
    if (int e = check_mpi(rc, "MPI_Fetch_and_op"); e) return e;
  }
  if (int e = check_mpi(MPI_Win_flush(r.me, r.inbox_win), "MPI_Win_flush"); e) return e;
  MPI_Win_sync(r.inbox_win);  // the records the counts cover are visible here
  bool any = false;
  for (int p = 0; p < r.procs; ++p) {
    if (p == r.me || arrived[p] <= r.applied[p]) continue;
    // A storer claiming more than its ring holds is believed no further than the ring.
    const uint64_t upto = std::min(arrived[p], r.applied[p] + r.ring_records);
    for (uint64_t i = r.applied[p]; i < upto; ++i) {
      store_record rec;
      std::byte* slot = r.inboxes + record_at(r, p, i);
      std::memcpy(&rec, slot, sizeof rec);  // copied once, then checked
      std::memset(slot, 0, sizeof rec);     // never applied twice
      size_t len = 0;
      uint64_t disp = 0;
      if (!well_formed(r, rec, len, disp)) {
        r.stats.bad_records++;
        continue;
      }
      std::memcpy(r.heap + disp, &rec.value, len);
      r.applied_bytes += len;
    }
    r.applied[p] = upto;
    MPI_Win_sync(r.inbox_win);  // the zeroed slots, before the storer may reuse them
    const int rc = MPI_Accumulate(&r.applied[p], 1, MPI_UINT64_T, r.me, applied_at(r, p), 1,
                                  MPI_UINT64_T, MPI_REPLACE, r.inbox_win);
    if (int e = check_mpi(rc, "MPI_Accumulate"); e) return e;
    any = true;
  }
  if (!any) return SPLITC_OK;
  MPI_Win_sync(r.win);  // the applied stores, for RMA on the heap window
  return check_mpi(MPI_Win_flush(r.me, r.inbox_win), "MPI_Win_flush");
}

}  // namespace hpam::splitc
