/*
 * hpam endpoints: connected to a peer's interface (its process index in the
 * job), with a queue of UCX's pending requests. A send that cannot go now
 * (all D request instances to the peer busy, the order window full, a
 * request queued before it, a fence not yet passed, or a send from inside
 * an active-message handler) returns UCS_ERR_NO_RESOURCE and UCX queues it
 * here; progress dispatches the queues in order. Nothing is dropped.
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
        ucs_error("hpam: address of another job or malformed (process %u, deposit card %u)",
                  a.proc, a.md_proc);
        return UCS_ERR_UNREACHABLE;
    }
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0, sizeof(*self) - sizeof(self->super));
    self->peer = (int)a.proc;
    self->remote_md = a.md_proc;
    ucs_queue_head_init(&self->pending);
    ucs_status_t status = uct_hpam_iface_connect_peer(iface, self->peer, a.md_proc);
    if (status != UCS_OK) return status;
    ucs_list_add_tail(&iface->eps, &self->list);
    return UCS_OK;
}

static void drop_flush_waiters(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, ucs_status_t status)
{
    for (unsigned i = 0; i < iface->nwaiters;) {
        if (iface->waiters[i].ep != ep) {
            ++i;
            continue;
        }
        uct_completion_t *comp = iface->waiters[i].comp;
        iface->waiters[i] = iface->waiters[--iface->nwaiters];
        uct_invoke_completion(comp, status);
    }
}

static UCS_CLASS_CLEANUP_FUNC(uct_hpam_ep_t)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(&self->super.super);
    if (!ucs_queue_is_empty(&self->pending)) {
        ucs_warn("hpam: endpoint to process %d destroyed with requests pending", self->peer);
    }
    if (self->on_pending_list) ucs_list_del(&self->pending_link);
    if (self->unmarked) iface->unmarked_eps--;
    uct_hpam_rma_orphan(iface, self, UCS_ERR_CANCELED);
    drop_flush_waiters(iface, self, UCS_ERR_CANCELED);
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

/* Whether everything issued before an interface fence has completed. */
static int iface_fence_passed(uct_hpam_iface_t *iface)
{
    uct_hpam_flush_waiter_t w = {.ep = NULL, .ops_before = iface->fence_ops};
    const int done = uct_hpam_flush_done(iface, &w);
    iface->fence_ops = w.ops_before; /* marks issued for it count as before it */
    return done;
}

ucs_status_t uct_hpam_ep_may_send(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    if (ucs_unlikely(ep->failed)) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (ucs_unlikely(!ucs_queue_is_empty(&ep->pending)) && !ep->dispatching) {
        return UCS_ERR_NO_RESOURCE; /* keep the order: what was queued goes first */
    }
    if (ucs_unlikely(ep->fenced)) {
        const uct_hpam_peer_t *p = &iface->peers[ep->peer];
        (void)uct_hpam_rma_mark(iface, ep); /* puts by packets: their mark goes first */
        if (ep->unmarked || ep->rma_inflight != 0 || (int32_t)(p->unacked - ep->fence_seq) < 0) {
            return UCS_ERR_NO_RESOURCE;
        }
        ep->fenced = 0;
    }
    if (ucs_unlikely(iface->fenced)) {
        if (!iface_fence_passed(iface)) return UCS_ERR_NO_RESOURCE;
        iface->fenced = 0;
    }
    return UCS_OK;
}

static inline uct_pending_req_t *req_of(ucs_queue_elem_t *elem)
{
    return ucs_container_of(ucs_container_of(elem, uct_pending_req_priv_queue_t, queue_elem),
                            uct_pending_req_t, priv);
}

ucs_status_t uct_hpam_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    if (ucs_unlikely(ep->failed)) return UCS_ERR_BUSY; /* resend: it fails with the error */
    UCS_STATIC_ASSERT(sizeof(uct_pending_req_priv_queue_t) <= UCT_PENDING_REQ_PRIV_LEN);
    uct_pending_req_queue_push(&ep->pending, req);
    if (!ep->on_pending_list) {
        ucs_list_add_tail(&iface->pending_eps, &ep->pending_link);
        ep->on_pending_list = 1;
    }
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

void uct_hpam_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    while (!ucs_queue_is_empty(&ep->pending)) {
        uct_pending_req_t *req = req_of(ucs_queue_pull_non_empty(&ep->pending));
        if (cb != NULL) {
            cb(req, arg);
        } else {
            ucs_warn("hpam: endpoint to process %d: pending request %p purged", ep->peer, req);
        }
    }
    if (ep->on_pending_list) {
        ucs_list_del(&ep->pending_link);
        ep->on_pending_list = 0;
    }
}

/* Runs one endpoint's queue in order until a request cannot go. */
static unsigned dispatch_ep(uct_hpam_ep_t *ep)
{
    unsigned count = 0;
    ep->dispatching = 1;
    while (!ucs_queue_is_empty(&ep->pending)) {
        uct_pending_req_t *req = req_of(ucs_queue_pull_non_empty(&ep->pending));
        const ucs_status_t status = req->func(req);
        if (status == UCS_OK) {
            ++count;
            continue;
        }
        ucs_queue_push_head(&ep->pending, uct_pending_req_priv_queue_elem(req)); /* stays first */
        if (status == UCS_INPROGRESS) ++count;  /* partly sent: others get a turn */
        break;
    }
    ep->dispatching = 0;
    return count;
}

unsigned uct_hpam_dispatch_pending(uct_hpam_iface_t *iface)
{
    unsigned count = 0;
    uct_hpam_ep_t *ep, *tmp;
    ucs_list_for_each_safe(ep, tmp, &iface->pending_eps, pending_link) {
        count += dispatch_ep(ep);
        if (ucs_queue_is_empty(&ep->pending)) {
            ucs_list_del(&ep->pending_link);
            ep->on_pending_list = 0;
        }
    }
    return count;
}

ucs_status_t uct_hpam_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    if (ep->failed) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* Requests on the wire cannot be called back; deposits stop being ours. */
        uct_hpam_rma_orphan(iface, ep, UCS_ERR_CANCELED);
        return UCS_OK;
    }
    if (!ucs_queue_is_empty(&ep->pending)) return UCS_ERR_NO_RESOURCE;
    uct_hpam_flush_waiter_t w = {.ep = ep, .comp = comp, .ops_before = iface->ops_issued,
                                 .seq_before = iface->peers[ep->peer].next_seq};
    UCT_TL_EP_STAT_FLUSH(&ep->super);
    return uct_hpam_flush_or_wait(iface, &w);
}

ucs_status_t uct_hpam_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    ep->fenced = 1;
    ep->fence_seq = iface->peers[ep->peer].next_seq;
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
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
        ucs_list_for_each(ep, &iface->eps, list) {
            if (ep->peer == peer && !ep->failed) {
                found = ep;
                break;
            }
        }
        if (found == NULL) return;
        found->failed = 1;
        uct_hpam_rma_orphan(iface, found, UCS_ERR_ENDPOINT_TIMEOUT);
        drop_flush_waiters(iface, found, UCS_ERR_ENDPOINT_TIMEOUT);
        const ucs_status_t status = uct_iface_handle_ep_err(&iface->super.super, &found->super.super,
                                                            UCS_ERR_ENDPOINT_TIMEOUT);
        if (status != UCS_OK) {
            ucs_log(uct_base_iface_failure_log_level(&iface->super, status,
                                                     UCS_ERR_ENDPOINT_TIMEOUT),
                    "hpam: endpoint to process %d of job %s failed: peer lost", peer,
                    iface->md->params.job);
        }
    }
}
