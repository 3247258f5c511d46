// The ops table for one card type: thin adapters from the C API to
// endpoint<Card>. Included by the file that instantiates endpoint<Card>.
#pragma once

#include <algorithm>
#include <cstring>

#include "am/endpoint.hpp"
#include "capi/c_api.hpp"

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

  static constexpr c_ops table = {
      [](void* impl) { delete static_cast<ep*>(impl); },
      [](void* impl, int proc) {
        self(impl).connect(proc);
        return 0;
      },
      [](const void* impl) { return self(impl).nprocs(); },
      [](const void* impl) { return self(impl).my_proc(); },
      [](const void* impl) { return self(impl).max_bulk(); },
      [](void* impl, unsigned i, hpam_handler4_fn fn, void* ctx) {
        return to_c_error(self(impl).register_handler4(i, fn, ctx));
      },
      [](void* impl, unsigned i, hpam_handler_bulk_fn fn, void* ctx) {
        return to_c_error(self(impl).register_handler_bulk(i, fn, ctx));
      },
      [](void* impl, int dest, unsigned h, const uint64_t (&w)[4], bool block) {
        return to_c_error(self(impl).request_4(dest, h, w, block));
      },
      [](hpam_token* t, unsigned h, const uint64_t (&w)[4]) {
        return to_c_error(of(t).reply_4(*t, h, w));
      },
      [](void* impl, int dest, unsigned h, const void* src, size_t len, uint64_t target,
         uint64_t arg, bool block) {
        return to_c_error(self(impl).request_store(dest, h, src, len, target, arg, block));
      },
      [](hpam_token* t, unsigned h, const void* src, size_t len, uint64_t target, uint64_t arg) {
        return to_c_error(of(t).reply_store(*t, h, src, len, target, arg));
      },
      [](void* impl, int dest, unsigned h, uint64_t remote, void* local, size_t len, uint64_t arg,
         bool block) {
        return to_c_error(self(impl).request_get(dest, h, remote, local, len, arg, block));
      },
      [](void* impl, int dest, unsigned h, const iovec* iov, int n, uint64_t arg, bool block) {
        return to_c_error(self(impl).request_medium(dest, h, iov, n, arg, block));
      },
      [](void* impl, int dest, unsigned h, const void* head, size_t head_len, const void* body,
         size_t body_len, uint64_t arg) {
        return to_c_error(self(impl).try_medium_now(dest, h, head, head_len, body, body_len, arg));
      },
      [](void* impl, bool report) {
        int handled = 0;
        const status s = self(impl).poll(&handled, report);
        return s == status::ok ? handled : to_c_error(s);
      },
      [](void* impl) { return to_c_error(self(impl).resend_due()); },
      [](void* impl, uint32_t* mark) { return static_cast<int>(self(impl).resend_idle(*mark)); },
      [](void* impl, void* base, size_t len) {
        return to_c_error(self(impl).set_segment(base, len));
      },
      [](void* impl) { return to_c_error(self(impl).drain()); },
      [](const void* impl) { return self(impl).in_handler(); },
      [](const void* impl) { return self(impl).unreachable_peer(); },
      [](const void* impl, int proc) { return self(impl).peer_lost(proc); },
      [](const void* impl, int peer, hpam_counters_t* out) { fill(self(impl), peer, out); },
      [](const void* impl) { return self(impl).last_error().c_str(); },
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
  static constexpr const c_ops& p = plain::table;
  static constexpr c_ops table = {
      p.destroy,
      locked<p.connect>::call,
      p.nprocs,
      p.my_proc,
      p.max_bulk,
      locked<p.register4>::call,
      locked<p.register_bulk>::call,
      locked<p.request4>::call,
      locked<p.reply4>::call,
      locked<p.store>::call,
      locked<p.reply_store>::call,
      locked<p.get>::call,
      locked<p.medium>::call,
      locked<p.medium_now>::call,
      locked<p.poll>::call,
      locked<p.resend_due>::call,
      p.resend_idle,
      locked<p.set_segment>::call,
      locked<p.drain>::call,
      p.in_handler,
      locked<p.unreachable_peer>::call,
      locked<p.peer_lost>::call,
      locked<p.counters>::call,
      locked<p.last_error>::call,
  };
};

template <class Card>
void* create_endpoint(const endpoint_config& cfg, const c_ops** ops, hpam_ep_t* handle,
                      bool guarded) {
  auto* e = new endpoint<Card>(cfg);
  e->set_owner(handle);
  *ops = guarded ? &c_guarded_ops_for<Card>::table : &c_ops_for<Card>::table;
  return e;
}

}  // namespace hpam::capi
