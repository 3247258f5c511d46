/*
 * In-order delivery per peer, over the front ends' order service
 * (hpam_order, hpam_frontend.h). The D request instances of HPAM run
 * independently, so a packet lost (or dropped for want of a receive block)
 * and retransmitted arrives behind later ones. Open MPI's ob1 places a
 * fragment by its offset, but its datatype engine does not always position
 * correctly when fragments of a derived datatype come out of order (wrong
 * bytes, or a divide-by-zero in opal_convertor_generic_simple_position), and
 * vader and tcp never reorder. So the BTL delivers each peer's messages in
 * the order they were sent:
 *
 *  - the sender numbers its messages to each peer (the sequence number rides
 *    in the argument word above the BTL tag), and the AM layer runs with
 *    `ordered` set: message n goes out only once message n-D was
 *    acknowledged, that is received;
 *  - the receiver hands message n to Open MPI only after n-1; one that comes
 *    early (at most D-1 ahead, by the rule above) waits in one of D slots
 *    the service keeps for the peer. One outside that window, or already
 *    delivered, is dropped and counted (btl_hpam_stream_rejected).
 */
#include "btl_hpam.h"

#include "opal/util/output.h"

#define ORDER (&mca_btl_hpam_component.order)

int mca_btl_hpam_order_init(int nlocal, int depth, size_t max_payload)
{
    return HPAM_OK == hpam_order_init(ORDER, nlocal, depth, max_payload) ? OPAL_SUCCESS
                                                                         : OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_hpam_order_fini(void) { hpam_order_fini(ORDER); }

/* The descriptor every delivered message is handed over in, made once:
 * only its segment changes. One is enough: a callback never delivers
 * another message (it cannot poll: it runs inside a request handler), and
 * under MPI_THREAD_MULTIPLE the BTL's lock serialises polls. */
static mca_btl_base_segment_t delivered_segment;
static mca_btl_base_descriptor_t delivered = {.des_segments = &delivered_segment,
                                              .des_segment_count = 1};

/* Hands one message to the callback Open MPI registered for its tag. */
static inline void deliver(uint8_t tag, void *data, size_t len)
{
    mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    if (OPAL_UNLIKELY(NULL == reg->cbfunc)) return;
    delivered_segment.seg_addr.pval = data;
    delivered_segment.seg_len = len;
    reg->cbfunc(&mca_btl_hpam_module.super, (mca_btl_base_tag_t)tag, &delivered, reg->cbdata);
}

/* The messages that came early and whose turn has now come. */
static void __attribute__((noinline)) deliver_held(int src)
{
    hpam_order_msg_t m;
    while (hpam_order_take_due(ORDER, src, &m)) deliver((uint8_t)m.word, m.data, m.len);
}

static void __attribute__((cold)) rejected(int src, uint32_t seq)
{
    if (mca_btl_hpam_component.params.verbose > 0) {
        opal_output(0, "btl/hpam: dropped message %u from local rank %d: expected %u..%u", seq, src,
                    hpam_order_next_deliver(ORDER, src),
                    hpam_order_next_deliver(ORDER, src) + ORDER->window - 1);
    }
}

/* What on_message leaves to the order service's full path: a message
 * whose turn it is while others wait held (handed over, then those now
 * due), one that came early (held) or one rejected. */
static void __attribute__((noinline))
on_message_rest(int src, uint32_t seq, uint8_t tag, void *data, size_t len)
{
    const int verdict = hpam_order_arrive(ORDER, src, seq, tag, data, len);
    if (OPAL_LIKELY(HPAM_ORDER_DELIVER == verdict)) {
        deliver(tag, data, len);
        if (hpam_order_due(ORDER, src)) deliver_held(src);
    } else if (HPAM_ORDER_REJECTED == verdict && src >= 0 && src < (int)ORDER->npeers) {
        rejected(src, seq);
    }
}

/* The receive side: the AM bulk handler, called with the payload in place.
 * A message in turn with none held (every message of a clean wire) is
 * handed over by the function's last act, a tail call into Open MPI's
 * callback, and everything else by a tail call to on_message_rest. The
 * token's source is read in place (no call), so nothing is kept across any
 * call and the function has no frame. */
void mca_btl_hpam_on_message(hpam_token_t *token, void *ctx, void *data, size_t len, uint64_t arg)
{
    (void)ctx;
    const int src = hpam_token_source_in_place(token);
    const uint8_t tag = (uint8_t)arg;
    const uint32_t seq = (uint32_t)(arg >> MCA_BTL_HPAM_TAG_BITS);
    if (OPAL_LIKELY(hpam_order_in_turn(ORDER, src, seq, len))) {
        deliver(tag, data, len);
        return;
    }
    on_message_rest(src, seq, tag, data, len);
}
