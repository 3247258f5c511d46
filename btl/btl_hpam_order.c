/*
 * In-order delivery per peer. The D request instances of HPAM run
 * independently, so a packet lost (or dropped for want of a receive block)
 * and retransmitted arrives behind later ones. Open MPI's ob1 places a
 * fragment by its offset, but its datatype engine does not always position
 * correctly when fragments of a derived datatype come out of order (wrong
 * bytes, or a divide-by-zero in opal_convertor_generic_simple_position), and
 * vader and tcp never reorder. So the BTL delivers each peer's messages in
 * the order they were sent:
 *
 *  - the sender numbers its messages to each peer (the stream number rides
 *    in the argument word above the BTL tag), and the AM layer runs with
 *    `ordered` set: message n goes out only once message n-D was
 *    acknowledged, that is received;
 *  - the receiver hands message n to Open MPI only after n-1. One that comes
 *    early is at most D-1 ahead (by the rule above): it is copied into one
 *    of D slots kept for the peer and delivered when its turn comes.
 *
 * A message outside that window, or one already delivered, breaks the
 * protocol: it is dropped and counted (btl_hpam_stream_rejected).
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/util/output.h"

/* One early message waiting for its turn. */
typedef struct held_slot {
    uint64_t stream;    /* its stream number */
    uint32_t len;       /* payload bytes */
    uint8_t tag;        /* BTL tag */
    bool full;          /* holds a message */
} held_slot_t;

typedef struct peer_stream {
    uint64_t next_deliver; /* stream number the peer's next delivered message carries */
    uint32_t held;         /* messages waiting in the slots */
    held_slot_t *slots;    /* depth slots, by stream number modulo depth */
    unsigned char *data;   /* depth * max_payload bytes behind the slots */
} peer_stream_t;

static struct {
    peer_stream_t *peers; /* by local rank */
    int npeers;
    int depth;
    size_t max_payload;
    void *memory; /* slots and data of every peer, one allocation */
} order;

enum { tag_bits = MCA_BTL_HPAM_TAG_BITS };

uint64_t *mca_btl_hpam_next_send = NULL;

int mca_btl_hpam_order_init(int nlocal, int depth, size_t max_payload)
{
    const size_t slots = sizeof(held_slot_t) * (size_t) depth;
    const size_t per_peer = slots + (size_t) depth * max_payload;
    order.peers = calloc((size_t) nlocal, sizeof(peer_stream_t));
    mca_btl_hpam_next_send = calloc((size_t) nlocal, sizeof(uint64_t));
    /* Touched only when a message comes early: untouched pages cost nothing. */
    order.memory = calloc((size_t) nlocal, per_peer);
    if (NULL == order.peers || NULL == mca_btl_hpam_next_send || NULL == order.memory) {
        mca_btl_hpam_order_fini();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    order.npeers = nlocal;
    order.depth = depth;
    order.max_payload = max_payload;
    for (int p = 0; p < nlocal; ++p) {
        unsigned char *base = (unsigned char *) order.memory + per_peer * (size_t) p;
        order.peers[p].slots = (held_slot_t *) base;
        order.peers[p].data = base + slots;
    }
    return OPAL_SUCCESS;
}

void mca_btl_hpam_order_fini(void)
{
    free(order.peers);
    free(mca_btl_hpam_next_send);
    mca_btl_hpam_next_send = NULL;
    free(order.memory);
    memset(&order, 0, sizeof order);
}

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
    reg->cbfunc(&mca_btl_hpam_module.super, (mca_btl_base_tag_t) tag, &delivered, reg->cbdata);
}

/* The messages that came early and whose turn has now come. */
static void __attribute__((noinline)) deliver_held(peer_stream_t *s)
{
    for (;;) {
        held_slot_t *slot = &s->slots[s->next_deliver % (uint64_t) order.depth];
        if (!slot->full || slot->stream != s->next_deliver) return;
        slot->full = false;
        s->held--;
        s->next_deliver++;
        deliver(slot->tag, s->data + (size_t) (slot - s->slots) * order.max_payload, slot->len);
    }
}

static void __attribute__((cold)) reject(int src, uint64_t stream, const peer_stream_t *s)
{
    mca_btl_hpam_component.stream_rejected++;
    if (mca_btl_hpam_component.params.verbose > 0) {
        opal_output(0, "btl/hpam: dropped message %llu from local rank %d: expected %llu..%llu",
                    (unsigned long long) stream, src, (unsigned long long) s->next_deliver,
                    (unsigned long long) (s->next_deliver + (uint64_t) order.depth - 1));
    }
}

/* The receive side: the AM bulk handler, called with the payload in place. */
void mca_btl_hpam_on_message(hpam_token_t *token, void *ctx, void *data, size_t len, uint64_t arg)
{
    const int src = hpam_token_source(token);
    const uint8_t tag = (uint8_t) arg;
    const uint64_t stream = arg >> tag_bits;
    if (OPAL_UNLIKELY(src < 0 || src >= order.npeers || len > order.max_payload)) {
        mca_btl_hpam_component.stream_rejected++;
        return;
    }
    peer_stream_t *s = &order.peers[src];
    if (OPAL_LIKELY(stream == s->next_deliver)) {
        s->next_deliver++;
        deliver(tag, data, len);
        if (OPAL_UNLIKELY(0 != s->held)) deliver_held(s);
        return;
    }
    const uint64_t ahead = stream - s->next_deliver; /* huge when already delivered */
    held_slot_t *slot = &s->slots[stream % (uint64_t) order.depth];
    if (ahead >= (uint64_t) order.depth || slot->full) {
        reject(src, stream, s);
        return;
    }
    memcpy(s->data + (size_t) (slot - s->slots) * order.max_payload, data, len);
    slot->stream = stream;
    slot->len = (uint32_t) len;
    slot->tag = tag;
    slot->full = true;
    s->held++;
    mca_btl_hpam_component.held_in_order++;
}
