/*
 * Sends are HPAM requests carrying the BTL tag in the argument word; the
 * receiver's handler hands the payload, in place, to the callback Open MPI
 * registered for the tag, and the layer acknowledges it.
 *
 * HPAM's rule: a request handler may only reply to its requester. Open MPI's
 * callbacks send from inside the handler, so such sends, and sends finding
 * all D instances to the peer busy, are queued on the endpoint (the fragment
 * already holds the data) and issued from progress after the poll, in order.
 * Completion callbacks always come: a send is complete once its packet is in
 * the protocol's request buffer (kept there for retransmission).
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static inline hpam_ep_t *ep_of(void) { return mca_btl_hpam_component.ep; }

/* One message to the peer, numbered in its stream (btl_hpam_order.c). */
static inline int launch(int peer, const struct iovec *iov, int iovcnt, mca_btl_base_tag_t tag)
{
    const int rc = hpam_try_request_medium(ep_of(), peer, MCA_BTL_HPAM_HANDLER, iov, iovcnt,
                                           mca_btl_hpam_order_arg(peer, tag));
    if (OPAL_LIKELY(HPAM_OK == rc)) mca_btl_hpam_order_sent(peer);
    return rc;
}

static inline int try_send(mca_btl_hpam_frag_t *frag)
{
    struct iovec iov = {.iov_base = frag->segments[0].seg_addr.pval,
                        .iov_len = frag->segments[0].seg_len};
    return launch(frag->endpoint->peer, &iov, 1, frag->tag);
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
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    opal_list_append(&ep->pending, (opal_list_item_t *) frag);
    if (!ep->queued) {
        ep->queued = true;
        opal_list_append(&mca_btl_hpam_component.pending_endpoints, &ep->super);
    }
}

/* All D instances to the peer are busy (or a resource is momentarily
 * exhausted): the fragment waits on the endpoint's queue, never dropped. */
static inline bool must_wait(int rc) { return HPAM_ERR_BUSY == rc || HPAM_ERR_AGAIN == rc; }

/* The packet can go now: not from a handler, nothing queued before it. */
static inline bool can_send_now(mca_btl_base_endpoint_t *endpoint)
{
    return !hpam_in_handler(ep_of()) && opal_list_is_empty(&endpoint->pending);
}

int mca_btl_hpam_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *) des;
    frag->endpoint = endpoint;
    frag->tag = tag;
    MCA_BTL_HPAM_LOCK();
    int rc = can_send_now(endpoint) ? try_send(frag) : HPAM_ERR_BUSY;
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

/* Packs header + payload into a fragment the BTL owns and queues it. */
static int queue_copy(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint32_t flags, mca_btl_base_tag_t tag)
{
    mca_btl_base_descriptor_t *des = mca_btl_hpam_alloc(btl, endpoint, MCA_BTL_NO_ORDER,
                                                        header_size + payload_size, flags);
    if (OPAL_UNLIKELY(NULL == des)) return OPAL_ERR_OUT_OF_RESOURCE;
    mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *) des;
    memcpy(frag->data, header, header_size);
    if (payload_size) {
        struct iovec iov = {.iov_base = frag->data + header_size, .iov_len = payload_size};
        uint32_t iov_count = 1;
        size_t max_data = payload_size;
        if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
            mca_btl_hpam_free(btl, des);
            return OPAL_ERROR;
        }
    }
    des->des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->tag = tag;
    enqueue(frag);
    return OPAL_SUCCESS;
}

int mca_btl_hpam_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       struct opal_convertor_t *convertor, void *header, size_t header_size,
                       size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                       mca_btl_base_descriptor_t **descriptor)
{
    if (OPAL_UNLIKELY(header_size + payload_size > btl->btl_max_send_size)) {
        if (NULL != descriptor) *descriptor = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    MCA_BTL_HPAM_LOCK();
    const bool contiguous = 0 == payload_size || !opal_convertor_need_buffers(convertor);
    int rc = HPAM_ERR_BUSY;
    if (contiguous && can_send_now(endpoint)) {
        void *data = NULL;
        if (payload_size) opal_convertor_get_current_pointer(convertor, &data);
        struct iovec iov[2] = {{.iov_base = header, .iov_len = header_size},
                               {.iov_base = data, .iov_len = payload_size}};
        rc = launch(endpoint->peer, iov, payload_size ? 2 : 1, tag);
    }
    int ret = OPAL_SUCCESS;
    if (must_wait(rc)) {
        /* Not now: keep a copy and send it from progress; never strand it. */
        ret = queue_copy(btl, endpoint, convertor, header, header_size, payload_size, flags, tag);
    } else if (HPAM_OK != rc) {
        if (HPAM_ERR_UNREACHABLE == rc) mca_btl_hpam_report_lost_peer();
        ret = mca_btl_hpam_to_opal_error(rc);
    }
    MCA_BTL_HPAM_UNLOCK();
    if (OPAL_SUCCESS != ret && NULL != descriptor) *descriptor = NULL;
    return ret;
}

/* Sends queued fragments in order, endpoint by endpoint, until the peer's
 * instances are busy again. Returns how many went out. */
int mca_btl_hpam_drain_pending(void)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    int sent = 0;
    opal_list_item_t *item = opal_list_get_first(&c->pending_endpoints);
    while (item != opal_list_get_end(&c->pending_endpoints)) {
        mca_btl_base_endpoint_t *ep = (mca_btl_base_endpoint_t *) item;
        item = opal_list_get_next(item);
        while (!opal_list_is_empty(&ep->pending)) {
            mca_btl_hpam_frag_t *frag = (mca_btl_hpam_frag_t *) opal_list_get_first(&ep->pending);
            const int rc = try_send(frag);
            if (must_wait(rc)) break;
            opal_list_remove_first(&ep->pending);
            if (HPAM_ERR_UNREACHABLE == rc) mca_btl_hpam_report_lost_peer();
            complete(frag, mca_btl_hpam_to_opal_error(rc));
            ++sent;
        }
        if (opal_list_is_empty(&ep->pending)) {
            opal_list_remove_item(&c->pending_endpoints, &ep->super);
            ep->queued = false;
        }
    }
    return sent;
}

/* A peer was given up on: say which, and end the job through ob1. */
void mca_btl_hpam_report_lost_peer(void)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (c->lost_peer_reported) return;
    c->lost_peer_reported = true;
    const int lrank = hpam_unreachable_peer(c->ep);
    mca_btl_base_endpoint_t *ep = (lrank >= 0 && lrank < c->nlocal) ? c->peers[lrank] : NULL;
    char msg[512];
    snprintf(msg, sizeof msg,
             "btl/hpam: lost peer %s (local rank %d on %s): %s. Rerun, or raise "
             "btl_hpam_give_up_ms if the peer was only slow.",
             ep ? OPAL_NAME_PRINT(ep->proc->proc_name) : "(unknown)", lrank,
             opal_process_info.nodename, hpam_last_error());
    opal_output(0, "%s", msg);
    if (NULL != mca_btl_hpam_module.error_cb) {
        mca_btl_hpam_module.error_cb(&mca_btl_hpam_module.super, MCA_BTL_ERROR_FLAGS_FATAL,
                                     ep ? ep->proc : NULL, msg);
    }
}
