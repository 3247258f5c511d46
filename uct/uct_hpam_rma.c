/*
 * put, get and atomics as sender-based deposits: by the ticket in the rkey
 * and the offset of the remote address in the registration, on this
 * interface's initiator deposit card. Where the peer's memory is reachable
 * by cross-memory attach the deposit is done at once; otherwise it travels
 * as packets that the owner's memory-domain card serves (atomics on private
 * memory always do), and the operation completes in a later progress call.
 *
 * Memory the peer's domain allocated (card memory) is written, read and
 * updated within the call (hpam_dep_*_now: the checks, then a copy or a CPU
 * atomic), with no bounce buffer and no operation in flight; every other
 * operation is tried that way first, which costs one look at the slot, until
 * that said not-supported for its rkey (then never again for that rkey:
 * uct_hpam_rkey_t's not_direct).
 *
 * Buffered and short puts copy into a bounce buffer first (UCX may reuse its
 * buffer as soon as the call returns); gets into a bounce buffer hand the
 * bytes to UCX's unpack callback on completion. Every operation stays in
 * the in-flight table (the front ends' hpam_rdma_ops, hpam_frontend.h) until
 * its handle says done, so flush and fence wait for it (uct_hpam_flush.c).
 */

#include "uct_hpam.h"

ucs_status_t uct_hpam_rma_init(uct_hpam_iface_t *iface)
{
    const int rc =
        hpam_rdma_ops_init(&iface->ops, iface->dep, UCT_HPAM_MAX_OPS, sizeof(uct_hpam_op_t));
    if (rc != HPAM_OK) return uct_hpam_status(rc);
    iface->nwaiters = 0;
    if (UCS_OK != ucs_posix_memalign((void **)&iface->bounce, UCS_SYS_CACHE_LINE_SIZE,
                                     (size_t)UCT_HPAM_BOUNCE_BUFS * UCT_HPAM_BOUNCE_SIZE,
                                     "hpam bounce")) {
        iface->bounce = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    iface->bounce_nfree = UCT_HPAM_BOUNCE_BUFS;
    for (int i = 0; i < UCT_HPAM_BOUNCE_BUFS; ++i) iface->bounce_free[i] = (int16_t)i;
    return UCS_OK;
}

static inline void *bounce_ptr(uct_hpam_iface_t *iface, int16_t b)
{
    return iface->bounce + (size_t)b * UCT_HPAM_BOUNCE_SIZE;
}

static inline int no_rkey(const uct_hpam_rkey_t *rkey)
{
    return (uintptr_t)rkey == 0 || (uintptr_t)rkey == UCT_INVALID_RKEY;
}

/* The rkey is one of this job's for ep's peer and [remote_addr, +length)
 * lies inside its registration: 1 with *offset set. */
static inline int rkey_names(const uct_hpam_iface_t *iface, const uct_hpam_ep_t *ep,
                             const uct_hpam_rkey_t *rkey, uint64_t remote_addr, size_t length,
                             uint64_t *offset)
{
    return rkey->job_hash == iface->md->params.job_hash && rkey->owner == ep->remote_md &&
           uct_hpam_rkey_offset(rkey, remote_addr, length, offset) == 0;
}

/* Checks before an operation: the endpoint may send, the peer's memory
 * domain has attached my deposit card (hello), a slot is free (and a bounce
 * buffer, taken into *bounce, when bounce is not NULL), and the remote range
 * lies inside the registration the rkey names. */
static ucs_status_t may_start(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep,
                              const uct_hpam_rkey_t *rkey, uint64_t remote_addr, size_t length,
                              int16_t *bounce, uint64_t *offset)
{
    ucs_status_t status = uct_hpam_ep_may_send(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) goto busy;
    const uct_hpam_peer_t *p = &iface->peers[ep->peer];
    if (ucs_unlikely(p->lost)) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (ucs_unlikely(p->hello != UCT_HPAM_HELLO_DONE)) {
        if (p->hello == UCT_HPAM_HELLO_FAILED) return UCS_ERR_UNREACHABLE;
        status = UCS_ERR_NO_RESOURCE;
        goto busy;
    }
    if (ucs_unlikely(hpam_rdma_ops_free(&iface->ops) == 0 ||
                     (bounce != NULL && iface->bounce_nfree == 0))) {
        status = UCS_ERR_NO_RESOURCE;
        goto busy;
    }
    if (ucs_unlikely(no_rkey(rkey))) {
        /* UCX moves zero bytes without an rkey (it registers no empty buffer). */
        if (length != 0) {
            ucs_error("hpam: %zu bytes to process %d without an rkey", length, ep->peer);
            return UCS_ERR_INVALID_PARAM;
        }
        *offset = 0;
    } else if (ucs_unlikely(!rkey_names(iface, ep, rkey, remote_addr, length, offset))) {
        ucs_error(
            "hpam: [0x%" PRIx64 ", +%zu) to process %d is not inside the registration the "
            "rkey names ([0x%" PRIx64 ", +%" PRIu64 ") on deposit card %u of job %" PRIx64 ")",
            remote_addr, length, ep->peer, rkey->base, rkey->length, rkey->owner, rkey->job_hash);
        return UCS_ERR_INVALID_PARAM;
    }
    if (bounce != NULL) *bounce = iface->bounce_free[--iface->bounce_nfree];
    return UCS_OK;
busy:
    if (status == UCS_ERR_NO_RESOURCE) iface->no_resource++;
    return status;
}

/* The checks of an operation that may be carried out within the call
 * (hpam_dep_*_now: the peer's card memory, or mine), which needs no record,
 * no bounce buffer and no greeting: the endpoint may send now (nothing
 * queued or fenced before it), the peer is not lost, the rkey is one of
 * this job's for that peer, the range lies inside its registration, and no
 * earlier operation found it not direct. 1 with *offset set; 0 when
 * may_start (and the deposit) decide, with their errors and counts. */
static inline int may_go_now(const uct_hpam_iface_t *iface, const uct_hpam_ep_t *ep,
                             const uct_hpam_rkey_t *rkey, uint64_t remote_addr, size_t length,
                             uint64_t *offset)
{
    return uct_hpam_ep_clear(iface, ep) && !iface->peers[ep->peer].lost && length != 0 &&
           !no_rkey(rkey) && !__atomic_load_n(&rkey->not_direct, __ATOMIC_RELAXED) &&
           rkey_names(iface, ep, rkey, remote_addr, length, offset);
}

/* A bounce buffer for an operation that could not be done within the call. */
static ucs_status_t take_bounce(uct_hpam_iface_t *iface, int16_t *bounce)
{
    if (ucs_unlikely(iface->bounce_nfree == 0)) {
        iface->no_resource++;
        return UCS_ERR_NO_RESOURCE;
    }
    *bounce = iface->bounce_free[--iface->bounce_nfree];
    return UCS_OK;
}

/* A within-the-call form (hpam_dep_*_now) for rkey, unless one said
 * not-supported for it before (the rkey's not_direct): then, and when this
 * one says so, HPAM_ERR_NOT_SUPPORTED without the call. */
static inline int noted(const uct_hpam_rkey_t *rkey, int rc)
{
    if (rc == HPAM_ERR_NOT_SUPPORTED) {
        __atomic_store_n(&((uct_hpam_rkey_t *)rkey)->not_direct, 1, __ATOMIC_RELAXED);
    }
    return rc;
}
#define DIRECT(_rkey, _call)                                                                       \
    (__atomic_load_n(&(_rkey)->not_direct, __ATOMIC_RELAXED) ? HPAM_ERR_NOT_SUPPORTED              \
                                                             : noted((_rkey), (_call)))

/* What a call done within itself returns: UCS_OK, or why it was refused. */
static inline ucs_status_t now_status(int rc)
{
    return rc == HPAM_OK ? UCS_OK : uct_hpam_status(rc);
}

/* A zero-length operation moves nothing and is done at once (the bounce
 * buffer, if any, goes back); it probes the peer (uct_hpam_am_probe). */
static ucs_status_t nothing_to_move(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, int16_t b)
{
    if (b >= 0) iface->bounce_free[iface->bounce_nfree++] = b;
    return uct_hpam_am_probe(iface, ep);
}

uct_hpam_op_t *uct_hpam_op_new(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, uct_completion_t *comp)
{
    uct_hpam_op_t *op = (uct_hpam_op_t *)hpam_rdma_op_take(&iface->ops, ep);
    op->comp = comp;
    op->fetched = 0;
    op->result = NULL;
    op->unpack = NULL;
    op->length = 0;
    op->bounce = -1;
    op->width = 0;
    return op;
}

static void op_release(uct_hpam_iface_t *iface, uct_hpam_op_t *op)
{
    if (op->bounce >= 0) iface->bounce_free[iface->bounce_nfree++] = op->bounce;
    hpam_rdma_op_give(&iface->ops, &op->head);
}

/* The operation is done (state > 0) or failed (state < 0): results to UCX,
 * resources back, then the completion (which may start new operations). */
static ucs_status_t op_finish(uct_hpam_iface_t *iface, uct_hpam_op_t *op, int state)
{
    const ucs_status_t status = state > 0 ? UCS_OK : uct_hpam_status(state);
    if (status == UCS_OK && op->width != 0) memcpy(op->result, &op->fetched, op->width);
    if (status == UCS_OK && op->unpack != NULL)
        op->unpack(op->unpack_arg, bounce_ptr(iface, op->bounce), op->length);
    const uct_hpam_ep_t *ep = op->head.owner;
    if (status != UCS_OK && op->comp == NULL && ep != NULL) {
        ucs_error("hpam: put/atomic to process %d of job %s failed: %s", ep->peer,
                  iface->md->params.job, ucs_status_string(status));
    }
    uct_completion_t *comp = op->comp;
    op_release(iface, op);
    if (comp != NULL) uct_invoke_completion(comp, status);
    return status;
}

/* After issuing: done at once (cross-memory, or copied), else in flight.
 * Returns what the UCX call returns: UCS_OK when done (or when nothing
 * waits for it: no completion), UCS_INPROGRESS when `comp` will be called. */
ucs_status_t uct_hpam_op_started(uct_hpam_iface_t *iface, uct_hpam_op_t *op, int rc)
{
    if (ucs_unlikely(rc != HPAM_OK)) {
        op_release(iface, op);
        if (rc == HPAM_ERR_BUSY || rc == HPAM_ERR_AGAIN) iface->no_resource++;
        return uct_hpam_status(rc);
    }
    const int state = hpam_rdma_op_track(&iface->ops, &op->head);
    if (state != 0) {
        op->comp = NULL; /* done within the call: UCX expects no callback */
        return op_finish(iface, op, state);
    }
    return op->comp != NULL ? UCS_INPROGRESS : UCS_OK;
}

static void finished(hpam_rdma_op_t *head, int state, void *iface)
{
    (void)op_finish(iface, (uct_hpam_op_t *)head, state);
}

unsigned uct_hpam_rma_progress(uct_hpam_iface_t *iface)
{
    if (hpam_rdma_ops_inflight(&iface->ops) == 0) return 0;
    hpam_dep_poll(iface->dep); /* gets posted between two calls batch (hpam_deposit.h) */
    return hpam_rdma_ops_progress(&iface->ops, finished, iface);
}

void uct_hpam_rma_close(uct_hpam_iface_t *iface)
{
    if (iface->dep == NULL || iface->ops.records == NULL) return;
    const unsigned left =
        hpam_rdma_ops_settle(&iface->ops, iface->md->params.am.give_up_ns, finished, iface);
    if (left > 0) {
        ucs_warn("hpam: interface closed with %u put/get/atomic operations unfinished", left);
    }
    hpam_rdma_ops_fini(&iface->ops);
}

/* Drops what points into the endpoint's user: the completion is called now. */
static void orphaned(hpam_rdma_op_t *head, void *status)
{
    uct_hpam_op_t *op = (uct_hpam_op_t *)head;
    uct_completion_t *comp = op->comp;
    op->comp = NULL;
    op->width = 0;
    op->unpack = NULL;
    if (comp != NULL) uct_invoke_completion(comp, *(ucs_status_t *)status);
}

/* ep goes away (or fails, or cancels): its operations complete now with
 * `status`; their deposits finish unobserved (results into our own words). */
void uct_hpam_rma_orphan(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, ucs_status_t status)
{
    hpam_rdma_ops_orphan(&iface->ops, ep, orphaned, &status);
}

#define RKEY(_rkey) ((const uct_hpam_rkey_t *)(uintptr_t)(_rkey))

/* A put has started: if it travels as packets, ep needs a mark (uct_hpam_flush.c). */
static ucs_status_t put_started(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep,
                                const uct_hpam_rkey_t *rkey, uint64_t offset, ucs_status_t status)
{
    if (!UCS_STATUS_IS_ERR(status)) uct_hpam_put_started(iface, ep, rkey, offset);
    return status;
}

static ucs_status_t put_from_bounce(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, size_t length,
                                    uint64_t offset, const uct_hpam_rkey_t *rkey, int16_t b)
{
    uct_hpam_op_t *op = uct_hpam_op_new(iface, ep, NULL);
    op->bounce = b;
    return put_started(iface, ep, rkey, offset,
                       uct_hpam_op_started(iface, op,
                                           hpam_dep_put(iface->dep, bounce_ptr(iface, b), length,
                                                        &rkey->ticket, offset, &op->head.handle)));
}

ucs_status_t uct_hpam_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                   uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uint64_t offset;
    UCT_CHECK_LENGTH(length, 0, UCT_HPAM_BOUNCE_SIZE, "put_short");
    UCT_TL_EP_STAT_OP(&ep->super, PUT, SHORT, length);
    if (ucs_likely(may_go_now(iface, ep, RKEY(rkey), remote_addr, length, &offset))) {
        const int rc = noted(
            RKEY(rkey), hpam_dep_put_now(iface->dep, buffer, length, &RKEY(rkey)->ticket, offset));
        if (ucs_likely(rc != HPAM_ERR_NOT_SUPPORTED)) return now_status(rc);
    }
    ucs_status_t status = may_start(iface, ep, RKEY(rkey), remote_addr, length, NULL, &offset);
    if (ucs_unlikely(status != UCS_OK)) return status;
    if (ucs_unlikely(length == 0)) return nothing_to_move(iface, ep, -1);
    const int rc = DIRECT(
        RKEY(rkey), hpam_dep_put_now(iface->dep, buffer, length, &RKEY(rkey)->ticket, offset));
    if (rc != HPAM_ERR_NOT_SUPPORTED) return now_status(rc);
    int16_t b;
    status = take_bounce(iface, &b);
    if (ucs_unlikely(status != UCS_OK)) return status;
    memcpy(bounce_ptr(iface, b), buffer, length);
    return put_from_bounce(iface, ep, length, offset, RKEY(rkey), b);
}

ssize_t uct_hpam_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                              uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uint64_t offset;
    /* The length is known only after packing: check the start address now,
     * the whole range after. */
    int16_t b;
    ucs_status_t status = may_start(iface, ep, RKEY(rkey), remote_addr, 0, &b, &offset);
    if (ucs_unlikely(status != UCS_OK)) return status;
    const size_t length = pack_cb(bounce_ptr(iface, b), arg);
    if (ucs_unlikely(length == 0)) return nothing_to_move(iface, ep, b);
    if (ucs_unlikely(length > UCT_HPAM_BOUNCE_SIZE || no_rkey(RKEY(rkey)) ||
                     uct_hpam_rkey_offset(RKEY(rkey), remote_addr, length, &offset) != 0)) {
        iface->bounce_free[iface->bounce_nfree++] = b;
        ucs_error("hpam: put_bcopy of %zu bytes at 0x%" PRIx64 " leaves the registration", length,
                  remote_addr);
        return UCS_ERR_INVALID_PARAM;
    }
    UCT_TL_EP_STAT_OP(&ep->super, PUT, BCOPY, length);
    const int rc = DIRECT(RKEY(rkey), hpam_dep_put_now(iface->dep, bounce_ptr(iface, b), length,
                                                       &RKEY(rkey)->ticket, offset));
    if (rc != HPAM_ERR_NOT_SUPPORTED) {
        iface->bounce_free[iface->bounce_nfree++] = b;
        return rc == HPAM_OK ? (ssize_t)length : uct_hpam_status(rc);
    }
    status = put_from_bounce(iface, ep, length, offset, RKEY(rkey), b);
    return status == UCS_OK ? (ssize_t)length : status;
}

/* Zero-copy put and get: one buffer, straight between the user's memory
 * and the peer's. */
static ucs_status_t zcopy(uct_ep_h tl_ep, int is_put, const uct_iov_t *iov, size_t iovcnt,
                          uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    UCT_CHECK_PARAM(iovcnt == 1 && (iov[0].count <= 1 || iov[0].stride == iov[0].length),
                    "hpam: one contiguous buffer per zcopy operation (iovcnt %zu)", iovcnt);
    const size_t length = uct_iov_get_length(iov);
    uint64_t offset;
    ucs_status_t status = may_start(iface, ep, RKEY(rkey), remote_addr, length, NULL, &offset);
    if (ucs_unlikely(status != UCS_OK)) return status;
    if (ucs_unlikely(length == 0)) return nothing_to_move(iface, ep, -1);
    const hpam_ticket_t *t = &RKEY(rkey)->ticket;
    const int rc =
        DIRECT(RKEY(rkey), is_put ? hpam_dep_put_now(iface->dep, iov[0].buffer, length, t, offset)
                                  : hpam_dep_get_now(iface->dep, iov[0].buffer, length, t, offset));
    if (rc != HPAM_ERR_NOT_SUPPORTED) return now_status(rc); /* no completion for it */
    uct_hpam_op_t *op = uct_hpam_op_new(iface, ep, comp);
    if (is_put) {
        UCT_TL_EP_STAT_OP(&ep->super, PUT, ZCOPY, length);
        return put_started(iface, ep, RKEY(rkey), offset,
                           uct_hpam_op_started(iface, op,
                                               hpam_dep_put(iface->dep, iov[0].buffer, length, t,
                                                            offset, &op->head.handle)));
    }
    UCT_TL_EP_STAT_OP(&ep->super, GET, ZCOPY, length);
    return uct_hpam_op_started(
        iface, op, hpam_dep_get(iface->dep, iov[0].buffer, length, t, offset, &op->head.handle));
}

ucs_status_t uct_hpam_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    return zcopy(tl_ep, 1, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t uct_hpam_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp)
{
    return zcopy(tl_ep, 0, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t uct_hpam_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uint64_t offset;
    UCT_CHECK_LENGTH(length, 0, UCT_HPAM_BOUNCE_SIZE, "get_bcopy");
    if (ucs_likely(may_go_now(iface, ep, RKEY(rkey), remote_addr, length, &offset))) {
        /* Card memory: unpacked from where the bytes are, no bounce buffer. */
        const int rc = noted(RKEY(rkey), hpam_dep_get_now_to(iface->dep, unpack_cb, arg, length,
                                                             &RKEY(rkey)->ticket, offset));
        if (ucs_likely(rc != HPAM_ERR_NOT_SUPPORTED)) return now_status(rc);
    }
    ucs_status_t status = may_start(iface, ep, RKEY(rkey), remote_addr, length, NULL, &offset);
    if (ucs_unlikely(status != UCS_OK)) return status;
    if (ucs_unlikely(length == 0)) {
        unpack_cb(arg, &iface->mark_sink, 0);
        return nothing_to_move(iface, ep, -1);
    }
    const int rc = DIRECT(RKEY(rkey), hpam_dep_get_now_to(iface->dep, unpack_cb, arg, length,
                                                          &RKEY(rkey)->ticket, offset));
    if (rc != HPAM_ERR_NOT_SUPPORTED) return now_status(rc);
    int16_t b;
    status = take_bounce(iface, &b);
    if (ucs_unlikely(status != UCS_OK)) return status;
    uct_hpam_op_t *op = uct_hpam_op_new(iface, ep, comp);
    op->bounce = b;
    op->unpack = unpack_cb;
    op->unpack_arg = arg;
    op->length = (uint32_t)length;
    UCT_TL_EP_STAT_OP(&ep->super, GET, BCOPY, length);
    return uct_hpam_op_started(iface, op,
                               hpam_dep_get(iface->dep, bounce_ptr(iface, op->bounce), length,
                                            &RKEY(rkey)->ticket, offset, &op->head.handle));
}

/* UCT's atomic opcodes are the deposit layer's, in the same order. */
_Static_assert((int)UCT_ATOMIC_OP_ADD == (int)HPAM_DEP_ADD &&
                   (int)UCT_ATOMIC_OP_AND == (int)HPAM_DEP_AND &&
                   (int)UCT_ATOMIC_OP_OR == (int)HPAM_DEP_OR &&
                   (int)UCT_ATOMIC_OP_XOR == (int)HPAM_DEP_XOR &&
                   (int)UCT_ATOMIC_OP_SWAP == (int)HPAM_DEP_SWAP &&
                   (int)UCT_ATOMIC_OP_CSWAP == (int)HPAM_DEP_CSWAP,
               "uct_atomic_op_t and hpam_dep_atomic_op in the same order");

/* An atomic that could not be done within the call by the first try (or
 * was not tried): may_start's checks and errors, then the deposit layer's
 * atomic, within the call (card memory) or as a packet its owner serves. */
static UCS_F_NOINLINE ucs_status_t atomic_later(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep,
                                                enum hpam_dep_atomic_op op_code, int width,
                                                uint64_t operand, uint64_t compare, void *result,
                                                uint64_t remote_addr, const uct_hpam_rkey_t *rkey,
                                                uct_completion_t *comp)
{
    uint64_t offset;
    uint64_t old = 0;
    ucs_status_t status = may_start(iface, ep, rkey, remote_addr, (size_t)width, NULL, &offset);
    if (ucs_unlikely(status != UCS_OK)) return status;
    const int rc = DIRECT(rkey, hpam_dep_atomic_now(iface->dep, op_code, width, &rkey->ticket,
                                                    offset, operand, compare, &old));
    if (rc != HPAM_ERR_NOT_SUPPORTED) {
        if (rc == HPAM_OK && result != NULL) memcpy(result, &old, (size_t)width);
        return now_status(rc);
    }
    uct_hpam_op_t *op = uct_hpam_op_new(iface, ep, result != NULL ? comp : NULL);
    op->result = result;
    op->width = result != NULL ? (uint8_t)width : 0;
    return uct_hpam_op_started(
        iface, op,
        hpam_dep_atomic(iface->dep, op_code, width, &rkey->ticket, offset, operand, compare,
                        result != NULL ? &op->fetched : NULL, &op->head.handle));
}

/* One atomic (result NULL for the posted forms), inline in each entry: into
 * card memory it completes within the call, its old value in result, after
 * may_go_now's checks and the deposit layer's (the slot held, its state,
 * generation, key and bounds, the word aligned): one call, one CPU atomic.
 * Anything else, and every refusal but the deposit layer's, is atomic_later's. */
static UCS_F_ALWAYS_INLINE ucs_status_t atomic(uct_ep_h tl_ep, enum hpam_dep_atomic_op op_code,
                                               int width, uint64_t operand, uint64_t compare,
                                               void *result, uint64_t remote_addr, uct_rkey_t rkey,
                                               uct_completion_t *comp)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    uint64_t offset;
    uint64_t old;
    UCT_TL_EP_STAT_ATOMIC(&ep->super);
    if (ucs_likely(may_go_now(iface, ep, RKEY(rkey), remote_addr, (size_t)width, &offset))) {
        const int rc = hpam_dep_atomic_now(iface->dep, op_code, width, &RKEY(rkey)->ticket, offset,
                                           operand, compare, &old);
        if (ucs_likely(rc == HPAM_OK)) {
            if (result != NULL) memcpy(result, &old, (size_t)width);
            return UCS_OK;
        }
        if (noted(RKEY(rkey), rc) != HPAM_ERR_NOT_SUPPORTED) return uct_hpam_status(rc);
    }
    return atomic_later(iface, ep, op_code, width, operand, compare, result, remote_addr,
                        RKEY(rkey), comp);
}

/* The posted forms: add, and, or, xor (no swap: its old value is the point). */
static UCS_F_ALWAYS_INLINE ucs_status_t post(uct_ep_h ep, unsigned opcode, int width,
                                             uint64_t value, uint64_t remote_addr, uct_rkey_t rkey)
{
    if (ucs_unlikely(opcode > UCT_ATOMIC_OP_XOR)) return UCS_ERR_UNSUPPORTED;
    return atomic(ep, (enum hpam_dep_atomic_op)opcode, width, value, 0, NULL, remote_addr, rkey,
                  NULL);
}

/* The fetching forms (compare-and-swap has its own call). */
static UCS_F_ALWAYS_INLINE ucs_status_t fetch(uct_ep_h ep, uct_atomic_op_t opcode, int width,
                                              uint64_t value, void *result, uint64_t remote_addr,
                                              uct_rkey_t rkey, uct_completion_t *comp)
{
    if (ucs_unlikely((unsigned)opcode > UCT_ATOMIC_OP_SWAP)) return UCS_ERR_UNSUPPORTED;
    return atomic(ep, (enum hpam_dep_atomic_op)opcode, width, value, 0, result, remote_addr, rkey,
                  comp);
}

ucs_status_t uct_hpam_ep_atomic64_post(uct_ep_h ep, unsigned opcode, uint64_t value,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    return post(ep, opcode, 8, value, remote_addr, rkey);
}

ucs_status_t uct_hpam_ep_atomic32_post(uct_ep_h ep, unsigned opcode, uint32_t value,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    return post(ep, opcode, 4, value, remote_addr, rkey);
}

ucs_status_t uct_hpam_ep_atomic64_fetch(uct_ep_h ep, uct_atomic_op_t opcode, uint64_t value,
                                        uint64_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return fetch(ep, opcode, 8, value, result, remote_addr, rkey, comp);
}

ucs_status_t uct_hpam_ep_atomic32_fetch(uct_ep_h ep, uct_atomic_op_t opcode, uint32_t value,
                                        uint32_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return fetch(ep, opcode, 4, value, result, remote_addr, rkey, comp);
}

ucs_status_t uct_hpam_ep_atomic_cswap64(uct_ep_h ep, uint64_t compare, uint64_t swap,
                                        uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result,
                                        uct_completion_t *comp)
{
    return atomic(ep, HPAM_DEP_CSWAP, 8, swap, compare, result, remote_addr, rkey, comp);
}

ucs_status_t uct_hpam_ep_atomic_cswap32(uct_ep_h ep, uint32_t compare, uint32_t swap,
                                        uint64_t remote_addr, uct_rkey_t rkey, uint32_t *result,
                                        uct_completion_t *comp)
{
    return atomic(ep, HPAM_DEP_CSWAP, 4, swap, compare, result, remote_addr, rkey, comp);
}
