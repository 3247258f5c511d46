/*
 * hpam endpoints: connected to a peer's interface (its process index in the
 * job), with a queue of UCX's pending requests. A send that cannot go now
 * (all D request instances to the peer busy, the order window full, a
 * request queued before it, a fence not yet passed, or a send from inside
 * an active-message handler) returns UCS_ERR_NO_RESOURCE and UCX queues it
 * here; progress dispatches the queues in order. Nothing is dropped. The
 * queues are the front ends' pending service (hpam_pending, hpam_frontend.h).
 */

#include "uct_hpam.h"

static UCS_CLASS_INIT_FUNC(uct_hpam_ep_t, const uct_ep_params_t *params)
{
    uct_hpam_iface_t *iface = ucs_derived_of(params->iface, uct_hpam_iface_t);
    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    uct_hpam_iface_addr_t a;
    memcpy(&a, params->iface_addr, sizeof a); /* one copy: check it, then use it */
    if (a.job_hash != iface->md->params.job_hash || a.proc >= (uint32_t)iface->nprocs ||
        a.md_proc >= (uint32_t)iface->nprocs) {
        ucs_error("hpam: address of another job or malformed (process %u, deposit card %u)", a.proc,
                  a.md_proc);
        return UCS_ERR_UNREACHABLE;
    }
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0, sizeof(*self) - sizeof(self->super));
    self->peer = (int)a.proc;
    self->remote_md = a.md_proc;
    hpam_pending_queue_init(&self->pending);
    ucs_status_t status = uct_hpam_iface_connect_peer(iface, self->peer, a.md_proc);
    if (status != UCS_OK) return status;
    ucs_list_add_tail(&iface->eps, &self->list);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_hpam_ep_t)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(&self->super.super);
    if (!hpam_pending_empty(&self->pending)) {
        ucs_warn("hpam: endpoint to process %d destroyed with requests pending", self->peer);
    }
    hpam_pending_purge(&iface->pending, &self->pending, NULL, NULL);
    if (self->unmarked) iface->unmarked_eps--;
    uct_hpam_rma_orphan(iface, self, UCS_ERR_CANCELED);
    uct_hpam_flush_drop_waiters(iface, self, UCS_ERR_CANCELED);
    ucs_list_del(&self->list);
}

UCS_CLASS_DEFINE(uct_hpam_ep_t, uct_base_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_hpam_ep_t, uct_ep_t, const uct_ep_params_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_hpam_ep_t, uct_ep_t);

ucs_status_t uct_hpam_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_hpam_ep_t)(params, ep_p);
}

void uct_hpam_ep_destroy(uct_ep_h tl_ep) { UCS_CLASS_DELETE_FUNC_NAME(uct_hpam_ep_t)(tl_ep); }

ucs_status_t uct_hpam_ep_may_send(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    if (ucs_likely(uct_hpam_ep_clear(iface, ep))) return UCS_OK;
    if (ucs_unlikely(ep->failed)) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (ucs_unlikely(hpam_pending_holds_back(&ep->pending))) {
        return UCS_ERR_NO_RESOURCE; /* keep the order: what was queued goes first */
    }
    if (ucs_unlikely(ep->fenced || iface->fenced)) return uct_hpam_fence_wait(iface, ep);
    return UCS_OK;
}

/* A pending request's place in its endpoint's queue: in UCX's private area. */
static inline hpam_pending_item_t *item_of(uct_pending_req_t *req)
{
    UCS_STATIC_ASSERT(sizeof(hpam_pending_item_t) <= UCT_PENDING_REQ_PRIV_LEN);
    return (hpam_pending_item_t *)req->priv;
}

static inline uct_pending_req_t *req_of(hpam_pending_item_t *item)
{
    return ucs_container_of((void *)item, uct_pending_req_t, priv);
}

ucs_status_t uct_hpam_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    if (ucs_unlikely(ep->failed)) return UCS_ERR_BUSY; /* resend: it fails with the error */
    hpam_pending_push(&iface->pending, &ep->pending, item_of(req));
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

typedef struct purge_ctx {
    uct_hpam_ep_t *ep;
    uct_pending_purge_callback_t cb;
    void *arg;
} purge_ctx_t;

static void purge_one(hpam_pending_item_t *item, void *ctx)
{
    const purge_ctx_t *c = ctx;
    uct_pending_req_t *req = req_of(item);
    if (c->cb != NULL) {
        c->cb(req, c->arg);
    } else {
        ucs_warn("hpam: endpoint to process %d: pending request %p purged", c->ep->peer, req);
    }
}

void uct_hpam_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    purge_ctx_t c = {.ep = ep, .cb = cb, .arg = arg};
    hpam_pending_purge(&uct_hpam_iface_of(tl_ep)->pending, &ep->pending, purge_one, &c);
}

/* One queued request, taken off its queue by hpam_pending_drain: UCX's
 * function sends it (its own sends are not held back meanwhile). */
static int dispatch_one(hpam_pending_item_t *item, void *ctx)
{
    uct_pending_req_t *req = req_of(item);
    const ucs_status_t status = req->func(req);
    if (status == UCS_OK) return HPAM_PENDING_SENT;
    return status == UCS_INPROGRESS ? HPAM_PENDING_PARTLY /* others get a turn */
                                    : HPAM_PENDING_WAIT;
}

unsigned uct_hpam_dispatch_pending(uct_hpam_iface_t *iface)
{
    return hpam_pending_drain(&iface->pending, dispatch_one, NULL);
}

/* Keepalive (UCT_IFACE_FLAG_EP_CHECK): an empty message to the peer; a flush
 * after it waits for the answer, and a peer that gives none within the
 * give-up time is lost and reported through the error handler. */
ucs_status_t uct_hpam_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    const ucs_status_t status =
        uct_hpam_am_probe(uct_hpam_iface_of(tl_ep), ucs_derived_of(tl_ep, uct_hpam_ep_t));
    return UCS_IS_ENDPOINT_ERROR(status) ? UCS_OK : status; /* reported by the error handler */
}

/* Every endpoint to a lost peer fails: its operations complete with the
 * error and UCX's error handler hears of it (which may destroy endpoints:
 * the scan starts again after each call). */
void uct_hpam_ep_fail_all(uct_hpam_iface_t *iface, int peer)
{
    for (;;) {
        uct_hpam_ep_t *ep, *found = NULL;
        ucs_list_for_each (ep, &iface->eps, list) {
            if (ep->peer == peer && !ep->failed) {
                found = ep;
                break;
            }
        }
        if (found == NULL) return;
        found->failed = 1;
        uct_hpam_rma_orphan(iface, found, UCS_ERR_ENDPOINT_TIMEOUT);
        uct_hpam_flush_drop_waiters(iface, found, UCS_ERR_ENDPOINT_TIMEOUT);
        const ucs_status_t status = uct_iface_handle_ep_err(
            &iface->super.super, &found->super.super, UCS_ERR_ENDPOINT_TIMEOUT);
        if (status != UCS_OK) {
            ucs_log(
                uct_base_iface_failure_log_level(&iface->super, status, UCS_ERR_ENDPOINT_TIMEOUT),
                "hpam: endpoint to process %d of job %s failed: peer lost", peer,
                iface->md->params.job);
        }
    }
}
