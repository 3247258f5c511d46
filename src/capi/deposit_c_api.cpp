// The C API of hpam_deposit.h (src/include) over deposit::endpoint. No exception
// crosses this boundary.
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "capi/c_api.hpp"
#include "capi/knobs.hpp"
#include "deposit/deposit.hpp"
#include "hpam_deposit.h"
#include "sys/shared_segment.hpp"

static_assert(sizeof(hpam::deposit::ticket) == HPAM_TICKET_BYTES);
static_assert(hpam::deposit::completed_index == HPAM_DEP_COMPLETED_INDEX);

struct hpam_dep {
  hpam::deposit::endpoint ep;
  explicit hpam_dep(const hpam::deposit::setup& s) : ep(s) {}
};

namespace {
thread_local std::string dep_error;

hpam::deposit::ticket unpack(const hpam_ticket_t* t) {
  hpam::deposit::ticket k;
  std::memcpy(&k, t->bytes, sizeof k);
  return k;
}
void pack(const hpam::deposit::ticket& k, hpam_ticket_t* t) {
  std::memcpy(t->bytes, &k, sizeof k);
}

hpam::deposit::op_handle* as_handle(hpam_dep_handle_t* h) {
  static_assert(sizeof(hpam::deposit::op_handle) == sizeof(hpam_dep_handle_t));
  return reinterpret_cast<hpam::deposit::op_handle*>(h);
}

int result(hpam::status s) {
  return hpam::capi::to_c_error(s);
}

constexpr hpam::deposit::atomic_op atomic_ops[] = {
    hpam::deposit::atomic_op::add,
    hpam::deposit::atomic_op::bit_and,
    hpam::deposit::atomic_op::bit_or,
    hpam::deposit::atomic_op::bit_xor,
    hpam::deposit::atomic_op::swap,
    hpam::deposit::atomic_op::compare_swap};  // [hpam_dep_atomic_op]
hpam::deposit::atomic_width atomic_width_of(int width) {
  return width == 4 ? hpam::deposit::atomic_width::w32 : hpam::deposit::atomic_width::w64;
}
}  // namespace

extern "C" {

void hpam_dep_config_init(hpam_dep_config_t* c) {
  std::memset(c, 0, sizeof *c);
  c->nprocs = 1;
  hpam::capi::set_defaults(nullptr, c);  // every knob, from the one table
}

int hpam_dep_create(const hpam_dep_config_t* c, hpam_dep_t** out) {
  if (!c || !out || !c->job) return HPAM_ERR_INVALID;
  *out = nullptr;
  if (std::string err = hpam::capi::check_config(*c); !err.empty()) {
    dep_error = "hpam: " + err;
    return HPAM_ERR_INVALID;
  }
  const hpam::deposit::setup s = hpam::capi::to_deposit_setup(*c);
  try {
    hpam::sys::remove_stale_segments();  // left by killed runs
    *out = new hpam_dep(s);
  } catch (const std::invalid_argument& e) {
    dep_error = e.what();
    return HPAM_ERR_INVALID;
  } catch (const std::exception& e) {
    dep_error = e.what();
    return HPAM_ERR_NO_RESOURCE;
  }
  return HPAM_OK;
}

int hpam_dep_attach(hpam_dep_t* d, int proc) {
  try {
    d->ep.attach_peer(proc);
  } catch (const std::exception& e) {
    dep_error = e.what();
    return HPAM_ERR_UNREACHABLE;
  }
  return HPAM_OK;
}

void hpam_dep_destroy(hpam_dep_t* d) {
  delete d;
}
int hpam_dep_cross_memory_to(const hpam_dep_t* d, int proc) {
  return d->ep.cross_memory_to(proc);
}

int hpam_dep_register(hpam_dep_t* d, void* base, size_t len, hpam_ticket_t* out) {
  hpam::deposit::ticket k;
  const hpam::status s = d->ep.register_memory(base, len, k);
  if (s == hpam::status::ok) pack(k, out);
  return result(s);
}

int hpam_dep_allocate(hpam_dep_t* d, size_t len, void** addr, hpam_ticket_t* out) {
  if (!addr || !out || len == 0) return HPAM_ERR_INVALID;
  hpam::deposit::ticket k;
  const hpam::status s = d->ep.allocate_memory(len, *addr, k);
  if (s == hpam::status::ok) pack(k, out);
  return result(s);
}

int hpam_dep_deregister(hpam_dep_t* d, const hpam_ticket_t* t) {
  return result(d->ep.deregister(unpack(t)));
}

unsigned hpam_dep_registrations(const hpam_dep_t* d) {
  return d->ep.registrations();
}

void hpam_dep_get_counters(const hpam_dep_t* d, hpam_dep_counters_t* out) {
  const hpam::nic::hamlyn::arrival_totals c = d->ep.card().arrivals();
  out->packets = c.packets;
  out->key_rejections = c.key_rejections;
  out->bounds_rejections = c.bounds_rejections;
  out->revoked_rejections = c.revoked_rejections;
  out->malformed = c.malformed;
}

int hpam_dep_put(hpam_dep_t* d, const void* src, size_t len, const hpam_ticket_t* t,
                 uint64_t offset, hpam_dep_handle_t* h) {
  return result(d->ep.put(src, len, unpack(t), offset, as_handle(h)));
}

int hpam_dep_get(hpam_dep_t* d, void* dst, size_t len, const hpam_ticket_t* t, uint64_t offset,
                 hpam_dep_handle_t* h) {
  return result(d->ep.get(dst, len, unpack(t), offset, as_handle(h)));
}

int hpam_dep_get_behind(hpam_dep_t* d, void* dst, size_t len, const hpam_ticket_t* t,
                        uint64_t offset, hpam_dep_handle_t* h) {
  return result(d->ep.get_behind_packets(dst, len, unpack(t), offset, as_handle(h)));
}

int hpam_dep_atomic(hpam_dep_t* d, enum hpam_dep_atomic_op op, int width, const hpam_ticket_t* t,
                    uint64_t offset, uint64_t operand, uint64_t compare, uint64_t* fetched,
                    hpam_dep_handle_t* h) {
  if (op < HPAM_DEP_ADD || op > HPAM_DEP_CSWAP || (width != 4 && width != 8))
    return HPAM_ERR_INVALID;
  return result(d->ep.atomic(atomic_ops[op], atomic_width_of(width), unpack(t), offset, operand,
                             compare, fetched, as_handle(h)));
}

int hpam_dep_put_now(hpam_dep_t* d, const void* src, size_t len, const hpam_ticket_t* t,
                     uint64_t offset) {
  return result(d->ep.put_now(src, len, unpack(t), offset));
}

int hpam_dep_get_now(hpam_dep_t* d, void* dst, size_t len, const hpam_ticket_t* t,
                     uint64_t offset) {
  return result(d->ep.get_now(dst, len, unpack(t), offset));
}

int hpam_dep_get_now_to(hpam_dep_t* d, void (*take)(void*, const void*, size_t), void* arg,
                        size_t len, const hpam_ticket_t* t, uint64_t offset) {
  return result(d->ep.get_now_to(take, arg, len, unpack(t), offset));
}

int hpam_dep_atomic_now(hpam_dep_t* d, enum hpam_dep_atomic_op op, int width,
                        const hpam_ticket_t* t, uint64_t offset, uint64_t operand, uint64_t compare,
                        uint64_t* fetched) {
  if (op < HPAM_DEP_ADD || op > HPAM_DEP_CSWAP || (width != 4 && width != 8))
    return HPAM_ERR_INVALID;
  return result(d->ep.atomic_now(atomic_ops[op], atomic_width_of(width), unpack(t), offset, operand,
                                 compare, fetched));
}

int hpam_dep_test(hpam_dep_t* d, hpam_dep_handle_t h) {
  hpam::status err = hpam::status::ok;
  hpam::deposit::op_handle oh{h.index, h.generation};
  switch (d->ep.test(oh, &err)) {
    case hpam::deposit::op_state::pending:
      return 0;
    case hpam::deposit::op_state::sent:
      return 1;
    case hpam::deposit::op_state::error:
      return err == hpam::status::ok ? HPAM_ERR_INVALID : result(err);
  }
  return HPAM_ERR_INVALID;
}

void hpam_dep_progress(hpam_dep_t* d) {
  d->ep.progress();
}
int hpam_dep_quiet_bind(const hpam_dep_t* d, hpam_dep_quiet_t* out) {
  if (!d || !out) return HPAM_ERR_INVALID;
  const hpam::deposit::endpoint::quiet_words w = d->ep.quiet_bind();
  static_assert(sizeof(bool) == 1 && sizeof(*w.cursor) == sizeof(*out->cursor));
  out->work = w.work;
  out->deferred = w.deferred;
  out->cursor = w.cursor;
  out->cells = reinterpret_cast<const unsigned char*>(w.cells);
  out->mask = w.mask;
  out->shift = w.shift;
  return HPAM_OK;
}
void hpam_dep_poll(hpam_dep_t* d) {
  d->ep.poll();
}
uint64_t hpam_dep_events(const hpam_dep_t* d) {
  return d->ep.events();
}
const char* hpam_dep_last_error(void) {
  return dep_error.c_str();
}

}  // extern "C"
