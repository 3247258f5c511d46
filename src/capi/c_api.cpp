// The C API of hpam_am.h (src/include). No exception crosses this boundary: setup
// errors become HPAM_ERR_* with their text in hpam_last_error().
#include "capi/c_api.hpp"

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "capi/hpam_frontend.h"
#include "capi/knobs.hpp"
#include "deposit/deposit.hpp"
#include "nic/hamlyn/hamlyn_am_card.hpp"
#include "nic/medusa/medusa_card.hpp"
#include "sys/shared_segment.hpp"
#include "sys/status.hpp"

namespace hpam::capi {

namespace {
thread_local std::string last_error_text;

// Whether the endpoint gets the background resend thread (knob
// background_resend): "auto" when its packets can be lost or held back
// on their way, so that only its sender's card can make them arrive.
bool wants_background_resend(const hpam_config_t& c, const am::endpoint_config& e) {
  const std::string mode = c.background_resend ? c.background_resend : "auto";
  return mode == "auto" ? am::can_lose(e) : mode == "on";
}

int fail(int err, const std::string& text) {
  last_error_text = text;
  return err;
}
}  // namespace

}  // namespace hpam::capi

using hpam::capi::fail;
using hpam::capi::last_error_text;

extern "C" {

void hpam_config_init(hpam_config_t* c) {
  std::memset(c, 0, sizeof *c);
  c->nprocs = 1;
  c->poll_on_send = 1;
  hpam::capi::set_defaults(c, nullptr);  // every knob, from the one table
}

int hpam_ep_create(const hpam_config_t* cfg, hpam_ep_t** out) {
  if (!cfg || !out) return fail(HPAM_ERR_INVALID, "hpam_ep_create: NULL argument");
  *out = nullptr;
  if (std::string err = hpam::capi::check_config(*cfg); !err.empty())
    return fail(HPAM_ERR_INVALID, "hpam: " + err);
  const std::string nic = cfg->nic ? cfg->nic : hpam::capi::default_nic;
  auto* ep = new (std::nothrow) hpam_ep{};
  if (!ep) return fail(HPAM_ERR_NO_RESOURCE, "hpam_ep_create: out of memory");
  ep->poll_on_send = cfg->poll_on_send != 0;
  try {
    hpam::sys::remove_stale_segments();  // left by killed runs of any card type
    const auto ecfg = hpam::capi::to_endpoint_config(*cfg);
    const bool guarded = hpam::capi::wants_background_resend(*cfg, ecfg);
    if (guarded) ep->background = std::make_unique<hpam::capi::background_resend>();
    if (nic == "medusa")
      ep->impl = hpam::capi::create_medusa_endpoint(ecfg, &ep->ops, ep, guarded);
    else if (nic == "hamlyn")
      ep->impl = hpam::capi::create_hamlyn_endpoint(ecfg, &ep->ops, ep, guarded);
    else
      throw std::logic_error("hpam: nic " + nic + " passed the knob check but has no card");
    if (guarded)
      ep->background->start(ep->ops, ep->impl,
                            hpam::capi::background_resend::period_for(ecfg.timeout_ns));
  } catch (const std::invalid_argument& e) {
    delete ep;
    return fail(HPAM_ERR_INVALID, e.what());
  } catch (const std::exception& e) {
    if (ep->impl) ep->ops->destroy(ep->impl);  // the thread could not start
    delete ep;
    return fail(HPAM_ERR_NO_RESOURCE, e.what());
  }
  *out = ep;
  return HPAM_OK;
}

int hpam_connect(hpam_ep_t* ep, int proc) {
  try {
    return ep->ops->connect(ep->impl, proc);
  } catch (const std::invalid_argument& e) {
    return fail(HPAM_ERR_INVALID, e.what());
  } catch (const std::exception& e) {
    return fail(HPAM_ERR_UNREACHABLE, e.what());
  }
}

int hpam_connect_all(hpam_ep_t* ep) {
  for (int p = 0; p < ep->ops->nprocs(ep->impl); ++p)
    if (int rc = hpam_connect(ep, p); rc != HPAM_OK) return rc;
  return HPAM_OK;
}

int hpam_ep_destroy(hpam_ep_t* ep) {
  if (!ep) return HPAM_OK;
  int rc = ep->ops->drain(ep->impl);
  if (rc != HPAM_OK) last_error_text = ep->ops->last_error(ep->impl);
  if (ep->background) ep->background->stop();
  ep->ops->destroy(ep->impl);
  delete ep;
  return rc;
}

int hpam_remove_job_segments(const char* job, int nprocs) {
  if (!job) return 0;
  static const char* const purposes[] = {hpam::nic::medusa_segment_purpose,
                                         hpam::nic::hamlyn_am_segment_purpose,
                                         hpam::deposit::segment_purpose};
  int removed = 0;
  for (int p = 0; p < nprocs; ++p)
    for (const char* what : purposes)
      removed += shm_unlink(hpam::sys::segment_name(job, what, p).c_str()) == 0;
  return removed;
}

int hpam_procs(const hpam_ep_t* ep) {
  return ep->ops->nprocs(ep->impl);
}
int hpam_my_proc(const hpam_ep_t* ep) {
  return ep->ops->my_proc(ep->impl);
}
size_t hpam_max_bulk(const hpam_ep_t* ep) {
  return ep->ops->max_bulk(ep->impl);
}

int hpam_register_handler4(hpam_ep_t* ep, unsigned index, hpam_handler4_fn fn, void* ctx) {
  return ep->ops->register4(ep->impl, index, fn, ctx);
}
int hpam_register_handler_bulk(hpam_ep_t* ep, unsigned index, hpam_handler_bulk_fn fn, void* ctx) {
  return ep->ops->register_bulk(ep->impl, index, fn, ctx);
}

void hpam_set_answer_hook(hpam_ep_t* ep, hpam_answer_fn fn, void* ctx) {
  ep->ops->answer_hook(ep->impl, fn, ctx);
}

// The C handle of the endpoint a handler runs in (set as its owner).
static hpam_ep_t* owner_of(hpam_token_t* t) {
  return static_cast<hpam_ep_t*>(t->owner);
}

// Errors carry their text to hpam_last_error().
static int noted(const hpam_ep_t* ep, int rc) {
  if (rc < 0 && rc != HPAM_ERR_BUSY) last_error_text = ep->ops->last_error(ep->impl);
  return rc;
}

// "All HPAM functions automatically poll" (HPAM 5.2.1): after a successful
// send, serve the network once, unless the user turned it off (the BTL does).
// What that poll finds (a peer given up on, a refusal) is not this send's
// result: it is kept for the caller's next hpam_poll.
static int then_poll(hpam_ep_t* ep, int rc) {
  if (rc == HPAM_OK && ep->poll_on_send && !ep->ops->in_handler(ep->impl)) {
    int p = ep->ops->poll(ep->impl, false);
    if (p < 0) return noted(ep, p);
  }
  return noted(ep, rc);
}

int hpam_request_4(hpam_ep_t* ep, int dest, unsigned h, uint64_t a0, uint64_t a1, uint64_t a2,
                   uint64_t a3) {
  const uint64_t w[4] = {a0, a1, a2, a3};
  return then_poll(ep, ep->ops->request4(ep->impl, dest, h, w, true));
}
int hpam_try_request_4(hpam_ep_t* ep, int dest, unsigned h, uint64_t a0, uint64_t a1, uint64_t a2,
                       uint64_t a3) {
  const uint64_t w[4] = {a0, a1, a2, a3};
  return then_poll(ep, ep->ops->request4(ep->impl, dest, h, w, false));
}
int hpam_reply_4(hpam_token_t* t, unsigned h, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3) {
  if (!t) return HPAM_ERR_INVALID;
  const uint64_t w[4] = {a0, a1, a2, a3};
  hpam_ep_t* ep = owner_of(t);
  return noted(ep, ep->ops->reply4(t, h, w));
}
int hpam_store(hpam_ep_t* ep, int dest, unsigned h, const void* src, size_t len,
               uint64_t remote_addr, uint64_t arg) {
  return then_poll(ep, ep->ops->store(ep->impl, dest, h, src, len, remote_addr, arg, true));
}
int hpam_try_store(hpam_ep_t* ep, int dest, unsigned h, const void* src, size_t len,
                   uint64_t remote_addr, uint64_t arg) {
  return then_poll(ep, ep->ops->store(ep->impl, dest, h, src, len, remote_addr, arg, false));
}
int hpam_reply_store(hpam_token_t* t, unsigned h, const void* src, size_t len, uint64_t remote_addr,
                     uint64_t arg) {
  if (!t) return HPAM_ERR_INVALID;
  hpam_ep_t* ep = owner_of(t);
  return noted(ep, ep->ops->reply_store(t, h, src, len, remote_addr, arg));
}
int hpam_get(hpam_ep_t* ep, int dest, unsigned h, uint64_t remote_addr, void* local, size_t len,
             uint64_t arg) {
  return then_poll(ep, ep->ops->get(ep->impl, dest, h, remote_addr, local, len, arg, true));
}
int hpam_request_medium(hpam_ep_t* ep, int dest, unsigned h, const struct iovec* iov, int iovcnt,
                        uint64_t arg) {
  return then_poll(ep, ep->ops->medium(ep->impl, dest, h, iov, iovcnt, arg, true));
}
int hpam_try_request_medium(hpam_ep_t* ep, int dest, unsigned h, const struct iovec* iov,
                            int iovcnt, uint64_t arg) {
  return then_poll(ep, ep->ops->medium(ep->impl, dest, h, iov, iovcnt, arg, false));
}

int hpam_send_medium_now(hpam_ep_t* ep, int dest, unsigned h, const void* head, size_t head_len,
                         const void* body, size_t body_len, uint64_t arg) {
  const int rc = ep->ops->medium_now(ep->impl, dest, h, head, head_len, body, body_len, arg);
  return __builtin_expect(rc == HPAM_OK, 1) ? rc : noted(ep, rc);
}
int hpam_send_medium_packed(hpam_ep_t* ep, int dest, unsigned h, hpam_pack_fn pack, void* pack_arg,
                            uint64_t arg) {
  const int rc = ep->ops->medium_packed(ep->impl, dest, h, pack, pack_arg, arg);
  return __builtin_expect(rc == HPAM_OK, 1) ? rc : noted(ep, rc);
}
int hpam_send_now_bind(hpam_ep_t* ep, hpam_send_now_t* out) {
  if (!ep || !out) return HPAM_ERR_INVALID;
  out->send = ep->ops->medium_now_bound;
  out->impl = ep->impl;
  return HPAM_OK;
}
int hpam_poll_now_bind(hpam_ep_t* ep, hpam_poll_now_t* out) {
  if (!ep || !out) return HPAM_ERR_INVALID;
  out->poll = ep->ops->poll;
  out->impl = ep->impl;
  return HPAM_OK;
}
int hpam_send_now_failed(hpam_ep_t* ep, int rc) {
  return noted(ep, rc);
}

int hpam_poll(hpam_ep_t* ep) {
  return noted(ep, ep->ops->poll(ep->impl, true));
}
int hpam_resend_due(hpam_ep_t* ep) {
  return noted(ep, ep->ops->resend_due(ep->impl));
}
int hpam_set_segment(hpam_ep_t* ep, void* base, size_t len) {
  if (!ep) return HPAM_ERR_INVALID;
  return ep->ops->set_segment(ep->impl, base, len);
}
static_assert(offsetof(hpam_token, src) == HPAM_TOKEN_SOURCE_OFFSET,
              "hpam_token_source_in_place (hpam_am.h) reads the source there");
int hpam_token_source(const hpam_token_t* t) {
  return t ? t->src : -1;
}
int hpam_in_handler(const hpam_ep_t* ep) {
  return ep->ops->in_handler(ep->impl) ? 1 : 0;
}
int hpam_unreachable_peer(const hpam_ep_t* ep) {
  return ep->ops->unreachable_peer(ep->impl);
}
int hpam_peer_lost(const hpam_ep_t* ep, int proc) {
  if (!ep || proc < 0 || proc >= ep->ops->nprocs(ep->impl)) return 0;
  return ep->ops->peer_lost(ep->impl, proc) ? 1 : 0;
}

int hpam_get_counters(const hpam_ep_t* ep, hpam_counters_t* out) {
  if (!ep || !out) return HPAM_ERR_INVALID;
  ep->ops->counters(ep->impl, -1, out);
  return HPAM_OK;
}
int hpam_get_peer_counters(const hpam_ep_t* ep, int peer, hpam_counters_t* out) {
  if (!ep || !out || peer < 0 || peer >= ep->ops->nprocs(ep->impl)) return HPAM_ERR_INVALID;
  ep->ops->counters(ep->impl, peer, out);
  return HPAM_OK;
}

const char* hpam_strerror(int err) {
  switch (err) {
    case HPAM_OK:
      return "success";
    case HPAM_ERR_BUSY:
      return "all request instances to the peer are busy";
    case HPAM_ERR_AGAIN:
      return "resource momentarily exhausted";
    case HPAM_ERR_UNREACHABLE:
      return "peer unreachable";
    case HPAM_ERR_INVALID:
      return "invalid argument";
    case HPAM_ERR_RULE:
      return "request-reply rule violated";
    case HPAM_ERR_REJECTED:
      return "rejected by a protection check";
    case HPAM_ERR_NO_RESOURCE:
      return "out of resources";
    case HPAM_ERR_SYSTEM:
      return "system call failed";
    case HPAM_ERR_NOT_SUPPORTED:
      return "not supported";
  }
  return "unknown error";
}

const char* hpam_last_error(void) {
  return last_error_text.c_str();
}

}  // extern "C"
