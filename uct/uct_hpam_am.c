/*
 * UCX active messages over the HPAM D-way request-reply protocol.
 *
 * Each UCX active message is one HPAM medium request: its bytes travel in
 * the packet and the receiver's bulk handler hands them, in place, to the
 * handler UCX registered for the id. The handler does not reply: the
 * protocol's empty acknowledgement answers the request (deferred, riding on
 * the next message the other way, or many in one ack packet), and the
 * answer hook (hpam_set_answer_hook) tells the sender which of its
 * messages were taken, by their sequence numbers.
 *
 * Where the two models clash:
 * - Order. UCX expects the messages of an endpoint in order; HPAM's D
 *   instances run independently and a retransmitted request arrives late.
 *   So every message carries a sequence number per (sender, receiver), and
 *   one that arrives early is held in a slot and handed over when the gap
 *   is filled (the front ends' order service, hpam_order in
 *   hpam_frontend.h). A sender keeps at most D messages beyond the oldest
 *   one not answered, so D slots per peer always suffice: a message is
 *   answered once its handler ran or it was held, so when every message
 *   before n is answered, every one of them has arrived and been handed
 *   over (the last to arrive filled the gap), and the receiver's cursor is
 *   at n or beyond.
 * - Sending from a handler. UCX's handlers send (UCP answers from inside
 *   them); HPAM lets a request handler only reply. A send from inside a
 *   handler returns UCS_ERR_NO_RESOURCE, UCX queues it on the endpoint, and
 *   progress sends it right after the poll, in order. Put, get and atomics
 *   are deposits on another card and may start from a handler.
 * - Busy. When the D instances to a peer (or the order window) are in use,
 *   sends return UCS_ERR_NO_RESOURCE and wait in the pending queue.
 */

#include "uct_hpam.h"

/* The argument word of a message: UCX's id, flags (zero), sequence number. */
static inline uint64_t am_arg(uint8_t id, uint32_t seq)
{
    return (uint64_t)id | ((uint64_t)seq << 32);
}
static inline uint8_t arg_id(uint64_t arg) { return (uint8_t)arg; }
static inline uint32_t arg_flags(uint64_t arg) { return (uint32_t)(arg >> 8) & 0xffffffu; }
static inline uint32_t arg_seq(uint64_t arg) { return (uint32_t)(arg >> 32); }

/* Request instances to `peer` in use by this interface (active messages + hello). */
static inline uint32_t instances_in_use(const uct_hpam_iface_t *iface, int peer)
{
    const uct_hpam_peer_t *p = &iface->peers[peer];
    return (hpam_order_next_send(&iface->order, peer) - p->unacked) +
           (p->hello == UCT_HPAM_HELLO_SENT);
}

static ucs_status_t no_resource(uct_hpam_iface_t *iface)
{
    iface->no_resource++;
    return UCS_ERR_NO_RESOURCE;
}

/* May a message go to ep's peer now? Checked before anything is packed. */
static inline ucs_status_t am_may_send(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    ucs_status_t status = uct_hpam_ep_may_send(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) {
        return status == UCS_ERR_NO_RESOURCE ? no_resource(iface) : status;
    }
    const uct_hpam_peer_t *p = &iface->peers[ep->peer];
    if (ucs_unlikely(p->lost)) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (ucs_unlikely(hpam_in_handler(iface->am))) return no_resource(iface); /* HPAM rule */
    if (ucs_unlikely(instances_in_use(iface, ep->peer) >= iface->window)) {
        return no_resource(iface);
    }
    return UCS_OK;
}

static inline void deliver(uct_hpam_iface_t *iface, uint64_t arg, void *data, size_t length);

/* A message to this interface itself (loopback): HPAM would run the handler
 * inside the send call, but UCX calls handlers only from progress. So it is
 * copied into its slot, in order, and progress hands it over
 * (uct_hpam_am_deliver_self); the slot is free again once handed over. */
static ucs_status_t self_send(uct_hpam_iface_t *iface, uint8_t id, const void *head,
                              size_t head_len, const void *body, size_t body_len)
{
    const uint32_t seq = hpam_order_next_send(&iface->order, iface->proc);
    const struct iovec iov[2] = {{.iov_base = (void *)head, .iov_len = head_len},
                                 {.iov_base = (void *)body, .iov_len = body_len}};
    hpam_order_sent(&iface->order, iface->proc);
    /* Always room: am_may_send keeps it within the window. */
    (void)hpam_order_hold(&iface->order, iface->proc, seq, am_arg(id, seq), iov, 2);
    return UCS_OK;
}

unsigned uct_hpam_am_deliver_self(uct_hpam_iface_t *iface)
{
    uct_hpam_peer_t *p = &iface->peers[iface->proc];
    const uint32_t start = hpam_order_next_deliver(&iface->order, iface->proc);
    /* Up to `end`: not what handlers send meanwhile. */
    const uint32_t end = hpam_order_next_send(&iface->order, iface->proc);
    hpam_order_msg_t m;
    while (hpam_order_next_deliver(&iface->order, iface->proc) != end &&
           hpam_order_take_due(&iface->order, iface->proc, &m)) {
        deliver(iface, m.word, m.data, m.len);
        /* the slot is free after the handler */
        p->unacked = hpam_order_next_deliver(&iface->order, iface->proc);
    }
    return hpam_order_next_deliver(&iface->order, iface->proc) - start;
}

/* What a send returns to UCX; a send refused takes its sequence number back. */
static inline ucs_status_t am_sent(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, int rc)
{
    if (ucs_likely(rc == HPAM_OK)) return UCS_OK;
    hpam_order_unsent(&iface->order, ep->peer);
    if (rc == HPAM_ERR_UNREACHABLE) {
        uct_hpam_iface_note_lost(iface, ep->peer);
        return UCS_ERR_ENDPOINT_TIMEOUT;
    }
    return rc == HPAM_ERR_BUSY || rc == HPAM_ERR_AGAIN ? no_resource(iface) : uct_hpam_status(rc);
}

/* One message of a head and a body (either may be empty; together within
 * max_bulk), sent now through the protocol's small-message send (the BTL's:
 * no iovec, no frame of the C API), or refused with nothing sent. */
static inline ucs_status_t am_send(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, uint8_t id,
                                   const void *head, size_t head_len, const void *body,
                                   size_t body_len)
{
    if (ucs_unlikely(ep->peer == iface->proc)) {
        return self_send(iface, id, head, head_len, body, body_len);
    }
    const uint32_t seq = hpam_order_next_send(&iface->order, ep->peer);
    hpam_order_sent(&iface->order, ep->peer); /* before: the answer may come inside the call */
    uct_hpam_am_enter(iface);
    const int rc = hpam_send_now(iface->am, &iface->send_now, ep->peer, UCT_HPAM_HANDLER_AM, head,
                                 head_len, body, body_len, am_arg(id, seq));
    uct_hpam_am_leave(iface);
    return am_sent(iface, ep, rc);
}

ucs_status_t uct_hpam_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header, const void *payload,
                                  unsigned length)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0, iface->max_bulk, "am_short");
    const ucs_status_t status = am_may_send(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) return status;
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, sizeof(header) + length);
    return am_send(iface, ep, id, &header, sizeof(header), payload, length);
}

ucs_status_t uct_hpam_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id, const uct_iov_t *uiov,
                                      size_t iovcnt)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)UCT_HPAM_AM_MAX_IOV, "am_short_iov");
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (uiov[i].count > 1 && uiov[i].stride != uiov[i].length) return UCS_ERR_UNSUPPORTED;
        total += uct_iov_get_length(&uiov[i]);
    }
    UCT_CHECK_LENGTH(total, 0, iface->max_bulk, "am_short_iov");
    const ucs_status_t status = am_may_send(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) return status;
    /* Gathered into one body (a short message: a copy of at most max_bulk). */
    uint8_t *at = iface->am_scratch;
    for (size_t i = 0; i < iovcnt; ++i) {
        const size_t len = uct_iov_get_length(&uiov[i]);
        if (len != 0) memcpy(at, uiov[i].buffer, len);
        at += len;
    }
    UCT_TL_EP_STAT_OP(&ep->super, AM, SHORT, total);
    return am_send(iface, ep, id, NULL, 0, iface->am_scratch, total);
}

/* UCX's pack callback and its argument, and the length it packed. */
typedef struct packing {
    uct_pack_callback_t pack;
    void *arg;
    size_t length;
} packing_t;

static size_t pack_into_block(void *dest, void *arg)
{
    packing_t *p = arg;
    p->length = p->pack(dest, p->arg);
    return p->length;
}

/* Packed straight into the outbound card block once an instance is free
 * (hpam_send_medium_packed): no copy through a scratch buffer. */
ssize_t uct_hpam_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags)
{
    uct_hpam_iface_t *iface = uct_hpam_iface_of(tl_ep);
    uct_hpam_ep_t *ep = ucs_derived_of(tl_ep, uct_hpam_ep_t);
    UCT_CHECK_AM_ID(id);
    ucs_status_t status = am_may_send(iface, ep);
    if (ucs_unlikely(status != UCS_OK)) return status;
    packing_t p = {.pack = pack_cb, .arg = arg, .length = 0};
    if (ucs_unlikely(ep->peer == iface->proc)) { /* to myself: held for order, copied there */
        p.length = pack_cb(iface->am_scratch, arg);
        status = self_send(iface, id, NULL, 0, iface->am_scratch, p.length);
    } else {
        const uint32_t seq = hpam_order_next_send(&iface->order, ep->peer);
        hpam_order_sent(&iface->order, ep->peer);
        uct_hpam_am_enter(iface);
        const int rc = hpam_send_medium_packed(iface->am, ep->peer, UCT_HPAM_HANDLER_AM,
                                               pack_into_block, &p, am_arg(id, seq));
        uct_hpam_am_leave(iface);
        status = am_sent(iface, ep, rc);
    }
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, &ep->super, AM, BCOPY, p.length);
    return status == UCS_OK ? (ssize_t)p.length : status;
}

/* A zero-length put or get moves nothing, but a flush after it must still
 * hear from the peer, and so notice a lost one, as after any operation: an
 * empty message in the endpoint's ordered stream, answered by the receiver
 * and not handed to UCX. Best effort: with no room in the window, what
 * fills it makes the flush wait for the peer already. */
ucs_status_t uct_hpam_am_probe(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep)
{
    ucs_status_t status = am_may_send(iface, ep);
    if (status == UCS_OK) status = am_send(iface, ep, UCT_HPAM_PROBE_ID, NULL, 0, NULL, 0);
    return status == UCS_ERR_NO_RESOURCE ? UCS_OK : status;
}

/* Hands one message to UCX (unless it is malformed or the interface is
 * closing: then it is only counted or dropped). */
static inline void deliver(uct_hpam_iface_t *iface, uint64_t arg, void *data, size_t length)
{
    const uint8_t id = arg_id(arg);
    if (ucs_unlikely(id == UCT_HPAM_PROBE_ID && arg_flags(arg) == 0 && length == 0)) return;
    if (ucs_unlikely(id >= UCT_AM_ID_MAX || arg_flags(arg) != 0)) {
        iface->am_rejected++;
        return;
    }
    if (ucs_unlikely(iface->closing)) return;
    (void)uct_iface_invoke_am(&iface->super, id, data, (unsigned)length, 0);
}

/* The gap is filled: hand over what waited, in order. */
static void deliver_held(uct_hpam_iface_t *iface, int src)
{
    hpam_order_msg_t m;
    while (hpam_order_take_due(&iface->order, src, &m)) deliver(iface, m.word, m.data, m.len);
}

/* The receive side: a UCX active message from process `src`. */
static void on_am(hpam_token_t *token, void *ctx, void *data, size_t length, uint64_t arg)
{
    uct_hpam_iface_t *iface = ctx;
    const int src = hpam_token_source(token);
    const uint32_t seq = arg_seq(arg);
    const int verdict = hpam_order_arrive(&iface->order, src, seq, arg, data, length);
    if (ucs_likely(verdict == HPAM_ORDER_DELIVER)) {
        deliver(iface, arg, data, length);
        if (ucs_unlikely(hpam_order_due(&iface->order, src))) deliver_held(iface, src);
    } else if (verdict == HPAM_ORDER_HELD) {
        iface->am_stashed++; /* early: held for order */
    } else {
        iface->am_rejected++; /* outside the window its sender keeps: not a message of ours */
    }
}

/* The sender side (the answer hook): my message `seq` to `peer` was answered. */
static void on_answered(void *ctx, int peer, unsigned handler, uint64_t arg)
{
    uct_hpam_iface_t *iface = ctx;
    if (handler != UCT_HPAM_HANDLER_AM) return; /* a hello: its reply handler judges it */
    uct_hpam_peer_t *p = &iface->peers[peer];
    const uint32_t off = arg_seq(arg) - p->unacked;
    /* Never outside what is in flight: the protocol answers each request once. */
    ucs_assert(off < hpam_order_next_send(&iface->order, peer) - p->unacked);
    p->acked_mask |= 1ull << off;
    while (p->acked_mask & 1) {
        p->acked_mask >>= 1;
        p->unacked++;
    }
}

/* Hello: the peer's memory domain attaches my deposit card, so that its card
 * can answer my deposits (fallback packets, atomics) there. */
void uct_hpam_send_hellos(uct_hpam_iface_t *iface)
{
    if (hpam_in_handler(iface->am)) return;
    for (int peer = 0; peer < iface->nprocs && iface->hello_wanted != 0; ++peer) {
        uct_hpam_peer_t *p = &iface->peers[peer];
        if (p->hello != UCT_HPAM_HELLO_WANTED || instances_in_use(iface, peer) >= iface->window) {
            continue;
        }
        p->hello = UCT_HPAM_HELLO_SENT; /* before: to myself, the reply runs inside the call */
        iface->hello_wanted--;
        uct_hpam_am_enter(iface);
        const int rc = hpam_try_request_4(iface->am, peer, UCT_HPAM_HANDLER_HELLO,
                                          iface->md->params.job_hash, 0, 0, 0);
        uct_hpam_am_leave(iface);
        if (rc == HPAM_OK) continue;
        p->hello = UCT_HPAM_HELLO_WANTED;
        iface->hello_wanted++;
        if (rc == HPAM_ERR_UNREACHABLE) uct_hpam_iface_note_lost(iface, peer);
    }
}

static void on_hello(hpam_token_t *token, void *ctx, uint64_t job_hash, uint64_t a1, uint64_t a2,
                     uint64_t a3)
{
    uct_hpam_iface_t *iface = ctx;
    uct_hpam_md_t *md = iface->md;
    int rc = HPAM_ERR_REJECTED;
    if (job_hash == md->params.job_hash) {
        uct_hpam_md_lock(md);
        rc = hpam_dep_attach(md->dep, hpam_token_source(token));
        uct_hpam_md_unlock(md);
    }
    (void)hpam_reply_4(token, UCT_HPAM_HANDLER_HELLO_REPLY, (uint64_t)(int64_t)rc, 0, 0, 0);
}

static void on_hello_reply(hpam_token_t *token, void *ctx, uint64_t rc, uint64_t a1, uint64_t a2,
                           uint64_t a3)
{
    uct_hpam_iface_t *iface = ctx;
    const int src = hpam_token_source(token);
    uct_hpam_peer_t *p = &iface->peers[src];
    if (p->hello != UCT_HPAM_HELLO_SENT) return;
    if ((int64_t)rc == HPAM_OK) {
        p->hello = UCT_HPAM_HELLO_DONE;
        return;
    }
    p->hello = UCT_HPAM_HELLO_FAILED;
    ucs_error("hpam: process %d of job %s could not attach the deposit card of process %d: %s; "
              "put, get and atomics to it fail",
              src, iface->md->params.job, iface->proc, hpam_strerror((int)(int64_t)rc));
}

ucs_status_t uct_hpam_am_init(uct_hpam_iface_t *iface)
{
    iface->am_scratch = ucs_malloc(iface->max_bulk, "hpam am bcopy");
    if (iface->am_scratch == NULL) return UCS_ERR_NO_MEMORY;
    if (HPAM_OK != hpam_register_handler_bulk(iface->am, UCT_HPAM_HANDLER_AM, on_am, iface) ||
        HPAM_OK != hpam_register_handler4(iface->am, UCT_HPAM_HANDLER_HELLO, on_hello, iface) ||
        HPAM_OK != hpam_register_handler4(iface->am, UCT_HPAM_HANDLER_HELLO_REPLY, on_hello_reply,
                                          iface)) {
        return UCS_ERR_IO_ERROR;
    }
    hpam_set_answer_hook(iface->am, on_answered, iface);
    return UCS_OK;
}
