/*
 * Flush, fence and marks: when UCX may call what an endpoint or interface
 * issued "done remotely".
 *
 * - Active messages are done once answered: a flush waits until its peer's
 *   answers (iface->peers[].unacked) pass the number the next message had
 *   at the flush.
 * - Deposit operations are done when their handle says so: a flush waits
 *   for those taken before it (hpam_rdma_ops_busy, the front ends' table).
 * - Puts that went as packets are "done" once in the owner's inbound FIFO
 *   but deposited only when the owner polls: a flush or fence then asks for
 *   one byte of the same registration (the mark), a get answered after them.
 *   The mark always travels as a packet (hpam_dep_get_behind): the last
 *   put's ticket may be one the owner refuses (a forged or revoked key),
 *   and a get the sender refused at once would end the flush before the
 *   owner served the puts ahead of it.
 * - A fence holds back later operations (uct_hpam_fence_wait from
 *   uct_hpam_ep_may_send) until everything before it is done, as a flush.
 *
 * A flush with a completion that cannot be done at once waits in
 * iface->waiters, looked at from progress.
 */

#include "uct_hpam.h"

void uct_hpam_put_started(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, const uct_hpam_rkey_t *rkey,
                          uint64_t offset)
{
    if (hpam_dep_cross_memory_to(iface->dep, (int)rkey->owner)) return; /* deposited when sent */
    if (!ep->unmarked) iface->unmarked_eps++;
    ep->unmarked = 1;
    ep->mark_ticket = rkey->ticket;
    ep->mark_offset = offset;
}

/* Issues ep's mark if its puts by packets are all sent: 1 when ep needs no
 * mark any more (issued now, or none was needed), 0 when it must wait. */
static int mark(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    if (!ep->unmarked) return 1;
    if (hpam_rdma_ops_busy(&iface->ops, ep, UINT64_MAX) || hpam_rdma_ops_free(&iface->ops) == 0) {
        return 0; /* its puts first */
    }
    ep->unmarked = 0;
    iface->unmarked_eps--;
    uct_hpam_op_t *op = uct_hpam_op_new(iface, ep, NULL);
    const ucs_status_t status =
        uct_hpam_op_started(iface, op,
                            hpam_dep_get_behind(iface->dep, &iface->mark_sink, 1, &ep->mark_ticket,
                                                ep->mark_offset, &op->head.handle));
    if (UCS_STATUS_IS_ERR(status)) {
        ucs_debug("hpam: mark to process %d: %s", ep->peer, ucs_status_string(status));
    }
    return 1;
}

/* Marks for the waiter's endpoint (all endpoints for an interface flush):
 * 1 when none is still to be issued. Issued marks extend w->ops_before. */
static int marked(uct_hpam_iface_t *iface, uct_hpam_flush_waiter_t *w)
{
    int all = 1;
    if (w->ep != NULL) {
        all = mark(iface, w->ep);
    } else if (iface->unmarked_eps != 0) {
        uct_hpam_ep_t *ep;
        ucs_list_for_each (ep, &iface->eps, list) all &= mark(iface, ep);
    } else {
        return 1;
    }
    w->ops_before = hpam_rdma_ops_issued(&iface->ops);
    return all;
}

/* Everything issued before the waiter's flush has completed remotely. For
 * an interface flush that includes UCX's requests on endpoints' pending
 * queues (UCX handed them over before the flush; a put waiting there for a
 * hello would otherwise be "flushed" before it was made): while any wait,
 * everything issued so far (they too, as they go out) must complete. May
 * issue marks (then w->ops_before moves past them: the flush waits for them). */
static int flush_done(uct_hpam_iface_t *iface, uct_hpam_flush_waiter_t *w)
{
    if (w->ep == NULL && iface->pending.first != NULL) {
        w->ops_before = hpam_rdma_ops_issued(&iface->ops);
        return 0;
    }
    if (!marked(iface, w) || hpam_rdma_ops_busy(&iface->ops, w->ep, w->ops_before)) return 0;
    if (w->ep != NULL) {
        const uct_hpam_peer_t *p = &iface->peers[w->ep->peer];
        return p->lost || (int32_t)(p->unacked - w->seq_before) >= 0;
    }
    for (int i = 0; i < iface->nprocs; ++i) {
        const uct_hpam_peer_t *p = &iface->peers[i];
        if (!p->lost && p->unacked != hpam_order_next_send(&iface->order, i)) return 0;
    }
    return 1;
}

/* UCS_OK when w's flush is done; else UCS_INPROGRESS (w waits if it has a
 * completion) or UCS_ERR_NO_RESOURCE (no room to wait: ask again). */
static ucs_status_t flush_or_wait(uct_hpam_iface_t *iface, uct_hpam_flush_waiter_t *w)
{
    /* Gets waiting for their batch (progress polls let a stream grow) go now. */
    if (hpam_rdma_ops_inflight(&iface->ops) != 0) hpam_dep_progress(iface->dep);
    if (flush_done(iface, w)) return UCS_OK;
    if (w->comp == NULL) return UCS_INPROGRESS;
    if (iface->nwaiters == UCT_HPAM_MAX_FLUSH_WAITERS) return UCS_ERR_NO_RESOURCE;
    iface->waiters[iface->nwaiters++] = *w;
    return UCS_INPROGRESS;
}

unsigned uct_hpam_flush_progress(uct_hpam_iface_t *iface)
{
    unsigned count = 0;
    for (unsigned i = 0; i < iface->nwaiters;) {
        if (!flush_done(iface, &iface->waiters[i])) {
            ++i;
            continue;
        }
        const uct_hpam_flush_waiter_t w = iface->waiters[i];
        iface->waiters[i] = iface->waiters[--iface->nwaiters];
        uct_invoke_completion(w.comp, (w.ep && w.ep->failed) ? UCS_ERR_ENDPOINT_TIMEOUT : UCS_OK);
        ++count;
    }
    return count;
}

void uct_hpam_flush_drop_waiters(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, ucs_status_t status)
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
    if (!hpam_pending_empty(&ep->pending)) return UCS_ERR_NO_RESOURCE;
    uct_hpam_flush_waiter_t w = {.ep = ep,
                                 .comp = comp,
                                 .ops_before = hpam_rdma_ops_issued(&iface->ops),
                                 .seq_before = hpam_order_next_send(&iface->order, ep->peer)};
    UCT_TL_EP_STAT_FLUSH(&ep->super);
    return flush_or_wait(iface, &w);
}

ucs_status_t uct_hpam_iface_flush(uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    uct_hpam_flush_waiter_t w = {
        .ep = NULL, .comp = comp, .ops_before = hpam_rdma_ops_issued(&iface->ops)};
    return flush_or_wait(iface, &w);
}

/* Operations after the fence wait until everything before it completed. */
ucs_status_t uct_hpam_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    ep->fenced = 1;
    ep->fence_seq = hpam_order_next_send(&iface->order, ep->peer);
    UCT_TL_EP_STAT_FENCE(&ep->super);
    return UCS_OK;
}

ucs_status_t uct_hpam_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    iface->fenced = 1;
    iface->fence_ops = hpam_rdma_ops_issued(&iface->ops);
    return UCS_OK;
}

/* Whether everything issued before an interface fence has completed. */
static int iface_fence_passed(uct_hpam_iface_t *iface)
{
    uct_hpam_flush_waiter_t w = {.ep = NULL, .ops_before = iface->fence_ops};
    const int done = flush_done(iface, &w);
    iface->fence_ops = w.ops_before; /* marks issued for it count as before it */
    return done;
}

ucs_status_t uct_hpam_fence_wait(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    if (ep->fenced) {
        const uct_hpam_peer_t *p = &iface->peers[ep->peer];
        (void)mark(iface, ep); /* puts by packets: their mark goes first */
        if (ep->unmarked || hpam_rdma_ops_busy(&iface->ops, ep, UINT64_MAX) ||
            (int32_t)(p->unacked - ep->fence_seq) < 0) {
            return UCS_ERR_NO_RESOURCE;
        }
        ep->fenced = 0;
    }
    if (iface->fenced) {
        if (!iface_fence_passed(iface)) return UCS_ERR_NO_RESOURCE;
        iface->fenced = 0;
    }
    return UCS_OK;
}
