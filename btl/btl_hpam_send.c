/*
 * Sends are HPAM requests carrying the BTL tag in the argument word; the
 * receiver's handler hands the payload, in place, to the callback Open MPI
 * registered for the tag, and the layer acknowledges it.
 *
 * HPAM's rule: a request handler may only reply to its requester. Open MPI's
 * callbacks send from inside the handler, so such sends, and sends of a
 * descriptor finding the peer's next instance busy, are queued on the
 * endpoint (the fragment already holds the data; fragments are bounded, see
 * btl_hpam_frag.c) and issued from progress after the poll, in order: the
 * queues are the front ends' pending service (hpam_pending, hpam_frontend.h).
 * Completion callbacks always come: a send is complete once its packet is in
 * the protocol's request buffer (kept there for retransmission) and on its
 * way, so a sender that then stops calling MPI loses nothing. sendi never
 * queues: it sends now or refuses.
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

/* The active-message endpoint (an Open MPI endpoint is a peer, `endpoint`). */
static inline hpam_ep_t *am_endpoint(void) { return mca_btl_hpam_component.ep; }

/* One message to the peer, numbered in its stream (btl_hpam_order.c): head
 * and body (either may be empty) in one packet, sent now or not at all;
 * HPAM_ERR_BUSY from a handler too (HPAM's rule: the send waits). */
static inline int launch(int peer, const void *head, size_t head_len, const void *body,
                         size_t body_len, mca_btl_base_tag_t tag)
{
    const int rc =
        hpam_send_now(am_endpoint(), &mca_btl_hpam_component.send_now, peer, MCA_BTL_HPAM_HANDLER,
                      head, head_len, body, body_len, mca_btl_hpam_order_arg(peer, tag));
    if (OPAL_LIKELY(HPAM_OK == rc)) mca_btl_hpam_order_sent(peer);
    return rc;
}

static inline int try_send(mca_btl_hpam_frag_t *frag)
{
    return launch(frag->endpoint->peer, frag->segments[0].seg_addr.pval, frag->segments[0].seg_len,
                  NULL, 0, frag->tag);
}

static void complete(mca_btl_hpam_frag_t *frag, int status)
{
    mca_btl_base_descriptor_t *des = &frag->base;
    const bool btl_owned = des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    if (NULL != des->des_cbfunc) {
        des->des_cbfunc(&mca_btl_hpam_module.super, frag->endpoint, des, status);
    }
    if (btl_owned) mca_btl_hpam_free(&mca_btl_hpam_module.super, des);
}

static void enqueue(mca_btl_hpam_frag_t *frag)
{
    hpam_pending_push(&mca_btl_hpam_component.pending, &frag->endpoint->pending,
                      &frag->pending_item);
}

/* All D instances to the peer are busy (or a resource is momentarily
 * exhausted): the fragment waits on the endpoint's queue, never dropped. */
static inline bool must_wait(int rc) { return HPAM_ERR_BUSY == rc || HPAM_ERR_AGAIN == rc; }

/* The packet may go now: nothing queued before it, and no send to the peer
 * was refused since the last poll (only a poll frees an instance or leaves
 * a handler; from a handler, launch refuses with HPAM_ERR_BUSY and the
 * packet waits). A refusal is remembered so that ob1's further attempts at
 * the same message (sendi once more, then alloc and send) do not knock on
 * the busy instance again. */
static inline bool can_send_now(mca_btl_base_endpoint_t *endpoint)
{
    return hpam_pending_empty(&endpoint->pending) &&
           endpoint->refused_at != mca_btl_hpam_component.polls;
}

static inline int refusal_noted(mca_btl_base_endpoint_t *endpoint, int rc)
{
    if (must_wait(rc)) endpoint->refused_at = mca_btl_hpam_component.polls;
    return rc;
}

int mca_btl_hpam_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *)des;
    frag->endpoint = endpoint;
    frag->tag = tag;
    MCA_BTL_HPAM_LOCK();
    int rc = can_send_now(endpoint) ? refusal_noted(endpoint, try_send(frag)) : HPAM_ERR_BUSY;
    if (OPAL_LIKELY(HPAM_OK == rc)) {
        if (des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) {
            des->des_cbfunc(btl, endpoint, des, OPAL_SUCCESS);
        }
        if (des->des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) mca_btl_hpam_free(btl, des);
        MCA_BTL_HPAM_UNLOCK();
        return 1; /* done: no further callback */
    }
    if (must_wait(rc)) {
        enqueue(frag); /* its callback comes when it is sent */
        MCA_BTL_HPAM_UNLOCK();
        return OPAL_SUCCESS;
    }
    if (HPAM_ERR_UNREACHABLE == rc) mca_btl_hpam_report_lost_peer();
    MCA_BTL_HPAM_UNLOCK();
    return mca_btl_hpam_to_opal_error(rc);
}

/* Sends header + payload now or not at all. Non-contiguous data is packed
 * into the pack buffer first; if the packet cannot go, the convertor is put
 * back where it was, so that Open MPI can pack the same bytes again. */
static int send_now(struct mca_btl_base_endpoint_t *endpoint, struct opal_convertor_t *convertor,
                    void *header, size_t header_size, size_t payload_size, mca_btl_base_tag_t tag)
{
    if (0 == payload_size) return launch(endpoint->peer, header, header_size, NULL, 0, tag);
    if (!opal_convertor_need_buffers(convertor)) {
        void *payload;
        opal_convertor_get_current_pointer(convertor, &payload);
        return launch(endpoint->peer, header, header_size, payload, payload_size, tag);
    }
    size_t position = convertor->bConverted, max_data = payload_size;
    struct iovec packed = {.iov_base = mca_btl_hpam_component.pack_buffer, .iov_len = payload_size};
    uint32_t count = 1;
    if (opal_convertor_pack(convertor, &packed, &count, &max_data) < 0 ||
        max_data != payload_size) {
        opal_convertor_set_position(convertor, &position);
        return HPAM_ERR_INVALID;
    }
    const int rc = launch(endpoint->peer, header, header_size, packed.iov_base, payload_size, tag);
    if (HPAM_OK != rc) opal_convertor_set_position(convertor, &position);
    return rc;
}

/* What sendi returns for a result that is not HPAM_OK (the lock, if any,
 * released already): a lost peer reported, a refusal for now counted as
 * OPAL_ERR_OUT_OF_RESOURCE, anything else translated. */
static int sendi_result(int rc)
{
    if (OPAL_UNLIKELY(HPAM_ERR_UNREACHABLE == rc)) mca_btl_hpam_report_lost_peer();
    if (!must_wait(rc)) return mca_btl_hpam_to_opal_error(rc);
    mca_btl_hpam_component.sendi_refused++;
    return OPAL_ERR_OUT_OF_RESOURCE;
}

/* The common sendi's failure (out of line): the stream number it took is
 * given back, the error kept for hpam_last_error, a refusal remembered. */
static __attribute__((noinline)) int sendi_failed(mca_btl_base_endpoint_t *endpoint, int rc)
{
    hpam_order_unsent(&mca_btl_hpam_component.order, endpoint->peer);
    (void)hpam_send_now_failed(am_endpoint(), rc);
    return sendi_result(refusal_noted(endpoint, rc));
}

/* Any sendi but the common one (out of line): with the lock when threads
 * are in use, packing non-contiguous data, or refusing because the peer's
 * queue holds fragments or a send to it was refused since the last poll. */
static __attribute__((noinline)) int sendi_general(mca_btl_base_endpoint_t *endpoint,
                                                   struct opal_convertor_t *convertor, void *header,
                                                   size_t header_size, size_t payload_size,
                                                   mca_btl_base_tag_t tag)
{
    MCA_BTL_HPAM_LOCK();
    const int rc = can_send_now(endpoint)
                       ? refusal_noted(endpoint, send_now(endpoint, convertor, header, header_size,
                                                          payload_size, tag))
                       : HPAM_ERR_BUSY;
    MCA_BTL_HPAM_UNLOCK();
    return OPAL_LIKELY(HPAM_OK == rc) ? OPAL_SUCCESS : sendi_result(rc);
}

/* Sends at once or refuses: OPAL_ERR_OUT_OF_RESOURCE, with no descriptor,
 * when the peer's instances are busy, something is queued before it, a
 * send to it was refused since the last poll, or this is a handler (btl.h's
 * contract for a sendi that cannot send now); Open MPI then keeps the
 * message and sends it another way (alloc and send, whose fragments are
 * bounded by btl_hpam_max_frags) or again from its progress.
 *
 * The common case (no threads, contiguous data, the peer's queue empty)
 * keeps nothing across its call into the protocol but the endpoint for a
 * failure: the stream number is taken before the call and given back if
 * the send fails (sendi_failed), so that after a send nothing is left to do
 * and the function needs no frame of saved registers. */
int mca_btl_hpam_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       struct opal_convertor_t *convertor, void *header, size_t header_size,
                       size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                       mca_btl_base_descriptor_t **descriptor)
{
    if (NULL != descriptor) *descriptor = NULL;
    if (OPAL_UNLIKELY(header_size + payload_size > btl->btl_max_send_size)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (OPAL_UNLIKELY(opal_using_threads() || !can_send_now(endpoint) ||
                      (0 != payload_size && opal_convertor_need_buffers(convertor)))) {
        return sendi_general(endpoint, convertor, header, header_size, payload_size, tag);
    }
    void *payload = NULL;
    if (0 != payload_size) opal_convertor_get_current_pointer(convertor, &payload);
    const int peer = endpoint->peer;
    const uint64_t arg = mca_btl_hpam_order_arg(peer, tag);
    mca_btl_hpam_order_sent(peer); /* given back by sendi_failed */
    const hpam_send_now_t *s = &mca_btl_hpam_component.send_now;
    const int rc = s->send(s->impl, peer, MCA_BTL_HPAM_HANDLER, header, header_size, payload,
                           payload_size, arg);
    if (OPAL_LIKELY(HPAM_OK == rc)) return OPAL_SUCCESS;
    return sendi_failed(endpoint, rc);
}

/* One queued fragment, taken off its queue by hpam_pending_drain: sent
 * (or failed for good) and completed, or back first on its queue. */
static int send_queued(hpam_pending_item_t *item, void *ctx)
{
    mca_btl_hpam_frag_t *frag =
        (mca_btl_hpam_frag_t *)((char *)item - offsetof(mca_btl_hpam_frag_t, pending_item));
    const int rc = try_send(frag);
    if (must_wait(rc)) return HPAM_PENDING_WAIT;
    if (HPAM_ERR_UNREACHABLE == rc) mca_btl_hpam_report_lost_peer();
    complete(frag, mca_btl_hpam_to_opal_error(rc));
    return HPAM_PENDING_SENT;
}

/* Sends queued fragments in order, endpoint by endpoint, until the peer's
 * instances are busy again. Returns how many went out. */
int mca_btl_hpam_drain_pending(void)
{
    return (int)hpam_pending_drain(&mca_btl_hpam_component.pending, send_queued, NULL);
}
