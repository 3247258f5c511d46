// The ops table for one card type: thin adapters from the C API to
// endpoint<Card>. Included by the file that instantiates endpoint<Card>.
#pragma once

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "am/endpoint.hpp"
#include "capi/c_api.hpp"
#include "sys/hot_page.hpp"

namespace hpam::capi {

using am::endpoint;
using am::protocol_counters;

template <class Card>
struct c_ops_for {
  using ep = endpoint<Card>;
  static ep& self(void* impl) { return *static_cast<ep*>(impl); }
  static const ep& self(const void* impl) { return *static_cast<const ep*>(impl); }
  static ep& of(hpam_token* t) { return *static_cast<ep*>(t->endpoint); }

  static void fill(const ep& e, int peer, hpam_counters_t* out) {
    const protocol_counters c = peer < 0 ? e.totals() : e.peer_counters(peer);
    std::memset(out, 0, sizeof *out);
    out->requests_sent = c.requests_sent;
    out->replies_sent = c.replies_sent;
    out->acks_sent = c.acks_sent;
    out->requests_received = c.requests_received;
    out->replies_received = c.replies_received;
    out->stalls = c.stalls;
    out->busy_returns = c.busy_returns;
    out->hint_misses = c.hint_misses;
    out->timeouts = c.timeouts;
    out->retransmissions = c.retransmissions;
    out->duplicates_reflected = c.duplicates_reflected;
    out->stale_replies = c.stale_replies;
    out->crc_failures = c.crc_failures;
    out->key_rejections = c.key_rejections;
    out->malformed = c.malformed;
    out->rule_violations = c.rule_violations;
    out->segment_rejections = c.segment_rejections;
    out->refusals_received = c.refusals_received;
    out->busy_peer_waits = c.busy_peer_waits;
    out->acks_piggybacked = c.acks_piggybacked;
    out->acks_combined = c.acks_combined;
    out->background_resends = c.background_resends;
    out->early_resends = c.early_resends;
    out->spurious_resends = c.spurious_resends;
    out->resends_deferred = c.resends_deferred;
    out->timeout_ns = 0;
    for (int p = 0; p < e.nprocs(); ++p)
      if ((peer < 0 || p == peer) && p != e.my_proc())
        out->timeout_ns = std::max(out->timeout_ns, e.current_timeout(p));
    if (peer < 0) {
      const nic::wire_counters& w = e.card().wire_stats();
      out->overflow_drops = e.card().overflow_drops();
      out->malformed += e.card().malformed();
      out->wire_dropped = w.dropped;
      out->wire_duplicated = w.duplicated;
      out->wire_corrupted = w.corrupted;
      out->wire_reordered = w.reordered;
      out->wire_delayed = w.delayed;
    }
  }

  // One function per slot of c_ops, each named after the endpoint member
  // it calls, so that a reader (or ctags) follows a call from the C API
  // into the protocol by name.
  static void destroy(void* impl) { delete static_cast<ep*>(impl); }
  static int connect(void* impl, int proc) {
    self(impl).connect(proc);
    return 0;
  }
  static int nprocs(const void* impl) { return self(impl).nprocs(); }
  static int my_proc(const void* impl) { return self(impl).my_proc(); }
  static size_t max_bulk(const void* impl) { return self(impl).max_bulk(); }
  static int register_handler4(void* impl, unsigned i, hpam_handler4_fn fn, void* ctx) {
    return to_c_error(self(impl).register_handler4(i, fn, ctx));
  }
  static int register_handler_bulk(void* impl, unsigned i, hpam_handler_bulk_fn fn, void* ctx) {
    return to_c_error(self(impl).register_handler_bulk(i, fn, ctx));
  }
  static void set_answer_hook(void* impl, hpam_answer_fn fn, void* ctx) {
    self(impl).set_answer_hook(fn, ctx);
  }
  static int request_4(void* impl, int dest, unsigned h, const uint64_t (&w)[4], bool block) {
    return to_c_error(self(impl).request_4(dest, h, w, block));
  }
  static int reply_4(hpam_token* t, unsigned h, const uint64_t (&w)[4]) {
    return to_c_error(of(t).reply_4(*t, h, w));
  }
  static int request_store(void* impl, int dest, unsigned h, const void* src, size_t len,
                           uint64_t target, uint64_t arg, bool block) {
    return to_c_error(self(impl).request_store(dest, h, src, len, target, arg, block));
  }
  static int reply_store(hpam_token* t, unsigned h, const void* src, size_t len, uint64_t target,
                         uint64_t arg) {
    return to_c_error(of(t).reply_store(*t, h, src, len, target, arg));
  }
  static int request_get(void* impl, int dest, unsigned h, uint64_t remote, void* local, size_t len,
                         uint64_t arg, bool block) {
    return to_c_error(self(impl).request_get(dest, h, remote, local, len, arg, block));
  }
  static int request_medium(void* impl, int dest, unsigned h, const iovec* iov, int n, uint64_t arg,
                            bool block) {
    return to_c_error(self(impl).request_medium(dest, h, iov, n, arg, block));
  }
  static int try_medium_now(void* impl, int dest, unsigned h, const void* head, size_t head_len,
                            const void* body, size_t body_len, uint64_t arg) {
    return to_c_error(self(impl).try_medium_now(dest, h, head, head_len, body, body_len, arg));
  }
  // hpam_send_now's send: the caller vouches that head and body point at
  // head_len and body_len bytes (not checked for null).
  [[HPAM_HOT_PAGE_AT(32)]] static int try_medium_now_bound(void* impl, int dest, unsigned h,
                                                           const void* head, size_t head_len,
                                                           const void* body, size_t body_len,
                                                           uint64_t arg) {
    return to_c_error(
        self(impl).template try_medium_now<false>(dest, h, head, head_len, body, body_len, arg));
  }
  static int try_medium_packed(void* impl, int dest, unsigned h, hpam_pack_fn pack, void* pack_arg,
                               uint64_t arg) {
    return to_c_error(self(impl).try_medium_packed(dest, h, pack, pack_arg, arg));
  }
  // Packets handled (>= 0) or an HPAM_ERR_* code.
  [[HPAM_HOT_PAGE]] static int poll(void* impl, bool report) {
    int handled = 0;
    const status s = self(impl).poll(&handled, report);
    return s == status::ok ? handled : to_c_error(s);
  }
  static int resend_due(void* impl) { return to_c_error(self(impl).resend_due()); }
  static int resend_idle(void* impl, uint32_t* mark) {
    return static_cast<int>(self(impl).resend_idle(*mark));
  }
  static int set_segment(void* impl, void* base, size_t len) {
    return to_c_error(self(impl).set_segment(base, len));
  }
  static int drain(void* impl) { return to_c_error(self(impl).drain()); }
  static bool in_handler(const void* impl) { return self(impl).in_handler(); }
  static int unreachable_peer(const void* impl) { return self(impl).unreachable_peer(); }
  static bool peer_lost(const void* impl, int proc) { return self(impl).peer_lost(proc); }
  static void counters(const void* impl, int peer, hpam_counters_t* out) {
    fill(self(impl), peer, out);
  }
  static const char* last_error(const void* impl) { return self(impl).last_error().c_str(); }

  // Each slot filled by name (designated initializers: a GNU and Clang
  // extension before C++20, in declaration order), so two slots of one
  // signature cannot be swapped unnoticed.
  static constexpr c_ops table = {
      .destroy = destroy,
      .connect = connect,
      .nprocs = nprocs,
      .my_proc = my_proc,
      .max_bulk = max_bulk,
      .register4 = register_handler4,
      .register_bulk = register_handler_bulk,
      .answer_hook = set_answer_hook,
      .request4 = request_4,
      .reply4 = reply_4,
      .store = request_store,
      .reply_store = reply_store,
      .get = request_get,
      .medium = request_medium,
      .medium_now = try_medium_now,
      .medium_now_bound = try_medium_now_bound,
      .medium_packed = try_medium_packed,
      .poll = poll,
      .resend_due = resend_due,
      .resend_idle = resend_idle,
      .set_segment = set_segment,
      .drain = drain,
      .in_handler = in_handler,
      .unreachable_peer = unreachable_peer,
      .peer_lost = peer_lost,
      .counters = counters,
      .last_error = last_error,
  };
};

// The same ops, each call into the endpoint under the guard of the C
// handle that owns it (background_resend.hpp); what reads only fields fixed
// at setup, or that the background thread never writes (in_handler), and
// destroy (the thread is stopped first) stay as they are.
template <class Card>
struct c_guarded_ops_for {
  using plain = c_ops_for<Card>;
  static std::recursive_mutex& guard_of(const void* impl) {
    return static_cast<hpam_ep*>(plain::self(impl).owner())->background->guard();
  }
  static std::recursive_mutex& guard_of(hpam_token* t) {
    return static_cast<hpam_ep*>(t->owner)->background->guard();
  }
  template <auto Fn>
  struct locked;
  template <class R, class First, class... A, R (*Fn)(First, A...)>
  struct locked<Fn> {
    static R call(First first, A... a) {
      std::lock_guard<std::recursive_mutex> g(guard_of(first));
      return Fn(first, a...);
    }
  };
  static constexpr c_ops table = {
      .destroy = plain::destroy,
      .connect = locked<plain::connect>::call,
      .nprocs = plain::nprocs,
      .my_proc = plain::my_proc,
      .max_bulk = plain::max_bulk,
      .register4 = locked<plain::register_handler4>::call,
      .register_bulk = locked<plain::register_handler_bulk>::call,
      .answer_hook = locked<plain::set_answer_hook>::call,
      .request4 = locked<plain::request_4>::call,
      .reply4 = locked<plain::reply_4>::call,
      .store = locked<plain::request_store>::call,
      .reply_store = locked<plain::reply_store>::call,
      .get = locked<plain::request_get>::call,
      .medium = locked<plain::request_medium>::call,
      .medium_now = locked<plain::try_medium_now>::call,
      .medium_now_bound = locked<plain::try_medium_now_bound>::call,
      .medium_packed = locked<plain::try_medium_packed>::call,
      .poll = locked<plain::poll>::call,
      .resend_due = locked<plain::resend_due>::call,
      .resend_idle = plain::resend_idle,
      .set_segment = locked<plain::set_segment>::call,
      .drain = locked<plain::drain>::call,
      .in_handler = plain::in_handler,
      .unreachable_peer = locked<plain::unreachable_peer>::call,
      .peer_lost = locked<plain::peer_lost>::call,
      .counters = locked<plain::counters>::call,
      .last_error = locked<plain::last_error>::call,
  };
};

template <class Card>
void* create_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                      bool guarded) {
  // Checked here rather than by static_assert: a sanitizer build
  // (--enable-sanitizers) makes a function's address no constant expression.
  if (!binds_every_slot(c_ops_for<Card>::table) ||
      !binds_every_slot(c_guarded_ops_for<Card>::table))
    throw std::logic_error("hpam: an ops table of the C API leaves a slot unbound");
  auto* e = new endpoint<Card>(cfg);
  e->set_owner(handle);
  *ops = guarded ? &c_guarded_ops_for<Card>::table : &c_ops_for<Card>::table;
  return e;
}

}  // namespace hpam::capi
