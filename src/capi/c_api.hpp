// Behind the C API: an endpoint of the chosen card type, reached through an
// ops table bound once at hpam_ep_create (as UCX binds its mappers), so no
// call branches on the card type.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "am/config.hpp"
#include "am/packet.hpp"
#include "am/token.hpp"
#include "capi/background_resend.hpp"
#include "hpam_am.h"
#include "sys/status.hpp"

// The C handler types are the core's: the C API passes them through as is.
static_assert(std::is_same_v<hpam_handler4_fn, hpam::am::handler4_fn>);
static_assert(std::is_same_v<hpam_handler_bulk_fn, hpam::am::handler_bulk_fn>);
static_assert(std::is_same_v<hpam_answer_fn, hpam::am::answer_fn>);
static_assert(std::is_same_v<hpam_pack_fn, hpam::am::pack_fn>);
static_assert(HPAM_MAX_HANDLERS == hpam::am::max_handlers);
static_assert(HPAM_PACKET_HEADER_BYTES == hpam::am::packet_header_size);

namespace hpam::capi {

using am::endpoint_config;

struct c_ops {
  void (*destroy)(void* impl);
  int (*connect)(void* impl, int proc);
  int (*nprocs)(const void* impl);
  int (*my_proc)(const void* impl);
  size_t (*max_bulk)(const void* impl);
  int (*register4)(void* impl, unsigned index, hpam_handler4_fn fn, void* ctx);
  int (*register_bulk)(void* impl, unsigned index, hpam_handler_bulk_fn fn, void* ctx);
  void (*answer_hook)(void* impl, hpam_answer_fn fn, void* ctx);
  int (*request4)(void* impl, int dest, unsigned h, const uint64_t (&w)[4], bool block);
  int (*reply4)(hpam_token* t, unsigned h, const uint64_t (&w)[4]);
  int (*store)(void* impl, int dest, unsigned h, const void* src, size_t len, uint64_t target,
               uint64_t arg, bool block);
  int (*reply_store)(hpam_token* t, unsigned h, const void* src, size_t len, uint64_t target,
                     uint64_t arg);
  int (*get)(void* impl, int dest, unsigned h, uint64_t remote, void* local, size_t len,
             uint64_t arg, bool block);
  int (*medium)(void* impl, int dest, unsigned h, const iovec* iov, int iovcnt, uint64_t arg,
                bool block);
  int (*medium_now)(void* impl, int dest, unsigned h, const void* head, size_t head_len,
                    const void* body, size_t body_len, uint64_t arg);
  // medium_now for a caller that vouches for its pointers (hpam_send_now).
  int (*medium_now_bound)(void* impl, int dest, unsigned h, const void* head, size_t head_len,
                          const void* body, size_t body_len, uint64_t arg);
  int (*medium_packed)(void* impl, int dest, unsigned h, hpam_pack_fn pack, void* pack_arg,
                       uint64_t arg);
  int (*poll)(void* impl, bool report);
  int (*resend_due)(void* impl);
  int (*resend_idle)(void* impl, uint32_t* mark);  // the background thread's, unguarded
  int (*set_segment)(void* impl, void* base, size_t len);
  int (*drain)(void* impl);
  bool (*in_handler)(const void* impl);
  int (*unreachable_peer)(const void* impl);
  bool (*peer_lost)(const void* impl, int proc);
  void (*counters)(const void* impl, int peer, hpam_counters_t* out);
  const char* (*last_error)(const void* impl);
};

// Whether every slot of o is bound: a table filled by designated
// initializers leaves a slot it does not name null.
constexpr bool binds_every_slot(const c_ops& o) {
  return o.destroy && o.connect && o.nprocs && o.my_proc && o.max_bulk && o.register4 &&
         o.register_bulk && o.answer_hook && o.request4 && o.reply4 && o.store && o.reply_store &&
         o.get && o.medium && o.medium_now && o.medium_now_bound && o.medium_packed && o.poll &&
         o.resend_due && o.resend_idle && o.set_segment && o.drain && o.in_handler &&
         o.unreachable_peer && o.peer_lost && o.counters && o.last_error;
}

// Builds an endpoint for cfg.card's NIC; throws like the endpoint does.
// guarded: bind the ops that take the handle's guard around each call
// (background_resend.hpp). Defined once per card type (endpoint_<card>.cpp).
void* create_medusa_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                             bool guarded);
void* create_hamlyn_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                             bool guarded);

// The one place a core status becomes an HPAM_ERR_* code (inline: the send
// paths return it for every message, busy included when a stream fills
// the window).
inline int to_c_error(status s) {
  switch (s) {
    case status::ok:
      return HPAM_OK;
    case status::busy:
      return HPAM_ERR_BUSY;
    case status::would_block:
      return HPAM_ERR_AGAIN;
    case status::peer_unreachable:
      return HPAM_ERR_UNREACHABLE;
    case status::invalid_argument:
      return HPAM_ERR_INVALID;
    case status::rule_violation:
      return HPAM_ERR_RULE;
    case status::rejected:
      return HPAM_ERR_REJECTED;
    case status::no_resource:
      return HPAM_ERR_NO_RESOURCE;
    case status::system_error:
      return HPAM_ERR_SYSTEM;
    case status::not_supported:
      return HPAM_ERR_NOT_SUPPORTED;
  }
  return HPAM_ERR_INVALID;
}

}  // namespace hpam::capi

struct hpam_ep {
  const hpam::capi::c_ops* ops;  // bound once at creation
  void* impl;                    // the endpoint<Card>
  bool poll_on_send;             // HPAM functions poll after sending (appendix A)
  // When the wire can lose packets: the guard and the thread that resends
  // while the owner makes no call (ops is then the guarded table).
  std::unique_ptr<hpam::capi::background_resend> background;
};
