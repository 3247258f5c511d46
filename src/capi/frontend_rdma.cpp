// hpam_rdma_ops (hpam_frontend.h): the front ends' put, get and atomic
// operations in flight on the deposit layer. A fixed table sized at setup:
// a stack of free records and the list of those in flight, each record the
// front end's (its own fields behind the hpam_rdma_op_t head). Taking,
// tracking and finishing never allocate.
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "hpam_frontend.h"

namespace {

constexpr unsigned max_capacity = 1u << 16;

hpam_rdma_op_t* record(const hpam_rdma_ops_t* t, uint32_t index) {
  return reinterpret_cast<hpam_rdma_op_t*>(t->records + t->stride * index);
}

uint32_t index_of(const hpam_rdma_ops_t* t, const hpam_rdma_op_t* op) {
  return static_cast<uint32_t>((reinterpret_cast<const unsigned char*>(op) - t->records) /
                               static_cast<std::ptrdiff_t>(t->stride));
}

}  // namespace

extern "C" int hpam_rdma_ops_init(hpam_rdma_ops_t* t, hpam_dep_t* dep, unsigned capacity,
                                  size_t record_size) {
  std::memset(t, 0, sizeof *t);
  if (capacity < 1 || capacity > max_capacity || record_size < sizeof(hpam_rdma_op_t) ||
      record_size > 4096) {
    return HPAM_ERR_INVALID;
  }
  t->stride = (record_size + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
  t->records = static_cast<unsigned char*>(std::calloc(capacity, t->stride));
  t->free_list = static_cast<uint32_t*>(std::calloc(capacity, sizeof(uint32_t)));
  t->inflight = static_cast<uint32_t*>(std::calloc(capacity, sizeof(uint32_t)));
  if (t->records == nullptr || t->free_list == nullptr || t->inflight == nullptr) {
    hpam_rdma_ops_fini(t);
    return HPAM_ERR_NO_RESOURCE;
  }
  t->dep = dep;
  t->capacity = capacity;
  t->nfree = capacity;
  for (uint32_t i = 0; i < capacity; ++i) t->free_list[i] = capacity - 1 - i;  // 0 first
  return HPAM_OK;
}

extern "C" void hpam_rdma_ops_fini(hpam_rdma_ops_t* t) {
  std::free(t->records);
  std::free(t->free_list);
  std::free(t->inflight);
  std::memset(t, 0, sizeof *t);
}

extern "C" hpam_rdma_op_t* hpam_rdma_op_take(hpam_rdma_ops_t* t, void* owner) {
  if (t->nfree == 0) return nullptr;
  hpam_rdma_op_t* op = record(t, t->free_list[--t->nfree]);
  op->owner = owner;
  op->issued = t->issued++;
  return op;
}

extern "C" void hpam_rdma_op_give(hpam_rdma_ops_t* t, hpam_rdma_op_t* op) {
  t->free_list[t->nfree++] = index_of(t, op);
}

extern "C" int hpam_rdma_op_track(hpam_rdma_ops_t* t, hpam_rdma_op_t* op) {
  const int state = hpam_dep_test(t->dep, op->handle);
  if (state == 0) t->inflight[t->ninflight++] = index_of(t, op);
  return state;
}

extern "C" unsigned hpam_rdma_ops_progress(hpam_rdma_ops_t* t, hpam_rdma_finish_fn finish,
                                           void* ctx) {
  // Nothing stopped pending since the last pass: a stream of gets, each
  // followed by a progress call, tested every waiting one on each call.
  const uint64_t events = hpam_dep_events(t->dep);
  if (events == t->events) return 0;
  t->events = events;
  unsigned done = 0;
  for (uint32_t i = 0; i < t->ninflight;) {
    hpam_rdma_op_t* op = record(t, t->inflight[i]);
    const int state = hpam_dep_test(t->dep, op->handle);
    if (state == 0) {
      ++i;
      continue;
    }
    t->inflight[i] = t->inflight[--t->ninflight];  // out of the set before its callback
    finish(op, state, ctx);
    ++done;
  }
  return done;
}

extern "C" int hpam_rdma_ops_busy(const hpam_rdma_ops_t* t, const void* owner, uint64_t before) {
  for (uint32_t i = 0; i < t->ninflight; ++i) {
    const hpam_rdma_op_t* op = record(t, t->inflight[i]);
    if (op->issued < before && (owner == nullptr || op->owner == owner)) return 1;
  }
  return 0;
}

extern "C" void hpam_rdma_ops_orphan(hpam_rdma_ops_t* t, const void* owner,
                                     void (*orphan)(hpam_rdma_op_t*, void*), void* ctx) {
  for (uint32_t i = 0; i < t->ninflight; ++i) {
    hpam_rdma_op_t* op = record(t, t->inflight[i]);
    if (owner == nullptr || op->owner != owner) continue;
    op->owner = nullptr;
    orphan(op, ctx);
  }
}

extern "C" unsigned hpam_rdma_ops_settle(hpam_rdma_ops_t* t, uint64_t timeout_ns,
                                         hpam_rdma_finish_fn finish, void* ctx) {
  using clock = std::chrono::steady_clock;
  const uint64_t bounded = timeout_ns < (uint64_t{1} << 62) ? timeout_ns : (uint64_t{1} << 62);
  const auto deadline = clock::now() + std::chrono::nanoseconds(bounded);
  while (t->ninflight > 0 && clock::now() < deadline) {
    hpam_dep_progress(t->dep);
    (void)hpam_rdma_ops_progress(t, finish, ctx);
  }
  return t->ninflight;
}
