/*
 * hpam_frontend.h — the protocol logic both front ends need above the C API,
 * written once: the Open MPI BTL (btl/) and the UCX transport (uct/) are
 * adapters over it, as Open MPI's btl/sm and UCX's uct/sm/mm are over their
 * shared-memory cores. Three services (C++ inside, src/capi/frontend_*.cpp;
 * C structs here so that the fast paths are inline and allocation-free):
 *
 *  - hpam_order: in-order delivery per peer. HPAM's D request instances run
 *    independently, so a retransmitted message arrives behind later ones;
 *    Open MPI and UCX both expect a peer's messages in the order sent. The
 *    sender numbers its messages per peer; the receiver hands message n over
 *    only after n-1, and holds one that came early (at most window-1 ahead,
 *    the sender's rule) in one of `window` slots kept for the peer.
 *  - hpam_pending: the sends that could not go yet (all D instances to the
 *    peer busy, a send from inside a handler, a fence), one FIFO per front-end
 *    endpoint and the list of endpoints whose FIFO is not empty; drained in
 *    order from progress until a send must wait again.
 *  - hpam_rdma_ops: put, get and atomics in flight on the deposit layer, each
 *    with its deposit handle: a bounded table (no allocation after setup),
 *    tested from progress, waited for by flush, orphaned when an endpoint goes.
 *
 * Functions return HPAM_OK or a negative HPAM_ERR_* code (hpam_am.h) where
 * they can fail. Nothing here locks: the front end serialises its calls.
 */
#ifndef HPAM_FRONTEND_H
#define HPAM_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "hpam_deposit.h"
#include "hpam_knobs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- hpam_order: in-order delivery per peer ------------------------------ */

/* Sequence numbers are 32 bits and compared modulo 2^32 (a message is
 * "ahead" by seq - next_deliver), so the stream never runs out. */
typedef struct hpam_order_peer {
  uint32_t next_send;    /* sequence number of my next message to the peer */
  uint32_t pad;
  /* Side by side in one aligned 8-byte word: hpam_order_in_turn tests both
   * with one load and one compare. */
  uint32_t next_deliver; /* sequence number of its next message to hand over */
  uint32_t held;         /* its messages that came early, waiting in slots */
} hpam_order_peer_t;

typedef struct hpam_order {
  hpam_order_peer_t *peers; /* [npeers] */
  unsigned char *slots;     /* [npeers][window] slots of slot_size bytes, one calloc */
  uint32_t npeers;          /* processes addressed by index 0..npeers-1 */
  uint32_t window;          /* most messages a sender has beyond next_deliver (D) */
  size_t max_payload;       /* largest message a slot holds */
  size_t slot_size;         /* bytes per slot: its header and max_payload, 64-aligned */
  uint64_t held_total;      /* messages that came early and waited for their turn */
  uint64_t rejected;        /* dropped: already delivered, outside the window, malformed */
} hpam_order_t;

/* A held message whose turn has come: the front end's word (the BTL's tag,
 * UCX's argument word) and the payload, in its slot until the next call. */
typedef struct hpam_order_msg {
  uint64_t word;
  void *data;
  size_t len;
} hpam_order_msg_t;

enum hpam_order_verdict {
  HPAM_ORDER_DELIVER = 0, /* its turn: hand it over now, then take what is due */
  HPAM_ORDER_HELD = 1,    /* early: copied into a slot, handed over in its turn */
  HPAM_ORDER_REJECTED = 2 /* not a message of the stream: dropped and counted */
};

/* Sizes the state for npeers peers (1..2^24), a window of 1..1024 and
 * messages of at most max_payload bytes; slot memory is calloc'd (pages
 * untouched until a message comes early cost nothing). HPAM_ERR_INVALID,
 * HPAM_ERR_NO_RESOURCE; on error *o is left empty (fini is harmless). */
int hpam_order_init(hpam_order_t *o, int npeers, int window, size_t max_payload);
void hpam_order_fini(hpam_order_t *o);

/* Sender side: the number my next message to `peer` carries, and "it went". */
static inline uint32_t hpam_order_next_send(const hpam_order_t *o, int peer)
{
  return o->peers[peer].next_send;
}
static inline void hpam_order_sent(hpam_order_t *o, int peer) { o->peers[peer].next_send++; }
/* The message numbered last did not go after all: the next takes its number. */
static inline void hpam_order_unsent(hpam_order_t *o, int peer) { o->peers[peer].next_send--; }

/* Receiver side, the slow half of hpam_order_arrive (out of line): holds the
 * gathered bytes of message `seq` from `peer` if it is early and its slot is
 * free; otherwise rejects it. HPAM_ORDER_HELD or HPAM_ORDER_REJECTED (also
 * for a bad peer, a message too long, one already delivered or held). */
int hpam_order_hold(hpam_order_t *o, int peer, uint32_t seq, uint64_t word,
                    const struct iovec *iov, int iovcnt);

/* Receiver side: message `seq` from `peer` arrived (word: the front end's,
 * given back with it if it has to wait). HPAM_ORDER_DELIVER: hand it over,
 * then hpam_order_take_due while hpam_order_due says so. */
static inline int hpam_order_arrive(hpam_order_t *o, int peer, uint32_t seq, uint64_t word,
                                    void *data, size_t len)
{
  if (__builtin_expect((uint32_t)peer < o->npeers && len <= o->max_payload &&
                           seq == o->peers[peer].next_deliver, 1)) {
    o->peers[peer].next_deliver = seq + 1;
    return HPAM_ORDER_DELIVER;
  }
  struct iovec iov;
  iov.iov_base = data;
  iov.iov_len = len;
  return hpam_order_hold(o, peer, seq, word, &iov, 1);
}

/* Receiver side, the common case alone: message `seq` from `peer` is the
 * next in turn, fits, and no message of `peer` waits held. Then 1, and it
 * is counted as handed over (hand it over now; nothing is due after it);
 * else 0 and nothing changed: take the message through hpam_order_arrive.
 * A front end that hands over by a tail call keeps no state across it. */
static inline int hpam_order_in_turn(hpam_order_t *o, int peer, uint32_t seq, size_t len)
{
  if (__builtin_expect((uint32_t)peer < o->npeers && len <= o->max_payload, 1)) {
    hpam_order_peer_t *p = &o->peers[peer];
    /* next_deliver == seq and held == 0: the pair as one word (the
     * compiler merges the two adjacent loads into one). */
    if (__builtin_expect((((uint64_t)p->held << 32) | p->next_deliver) == seq, 1)) {
      p->next_deliver = seq + 1;
      return 1;
    }
  }
  return 0;
}

/* Whether messages of `peer` wait in slots (one may be due). */
static inline int hpam_order_due(const hpam_order_t *o, int peer)
{
  return o->peers[peer].held != 0;
}

/* The held message whose turn it is, if any: 1 and *msg (its slot is free
 * again: hand it over before the next arrival), else 0. */
int hpam_order_take_due(hpam_order_t *o, int peer, hpam_order_msg_t *msg);

/* The number the next message handed over from `peer` carries (the UCX
 * transport's delivery cursor, sent back to the sender). */
static inline uint32_t hpam_order_next_deliver(const hpam_order_t *o, int peer)
{
  return o->peers[peer].next_deliver;
}

/* ---- hpam_pending: sends that could not go yet ---------------------------- */

/* Embedded in the front end's send descriptor (BTL fragment, UCX pending
 * request). */
typedef struct hpam_pending_item {
  struct hpam_pending_item *next;
} hpam_pending_item_t;

/* One endpoint's FIFO (embedded in the front end's endpoint). */
typedef struct hpam_pending_queue {
  hpam_pending_item_t *head, *tail;
  struct hpam_pending_queue *prev, *next; /* in hpam_pending_t's list while not empty */
  uint8_t listed;                         /* on that list */
  uint8_t draining;                       /* its items are being sent (hpam_pending_drain) */
} hpam_pending_queue_t;

/* The endpoints whose FIFO is not empty, in the order they first waited. */
typedef struct hpam_pending {
  hpam_pending_queue_t *first, *last;
  uint64_t pushed; /* items queued in all */
} hpam_pending_t;

void hpam_pending_init(hpam_pending_t *p);
void hpam_pending_queue_init(hpam_pending_queue_t *q);

static inline int hpam_pending_empty(const hpam_pending_queue_t *q) { return q->head == NULL; }

/* A new send on q must queue behind what waits (keeping the order) unless
 * it comes from q's own drain (a queued request sending). */
static inline int hpam_pending_holds_back(const hpam_pending_queue_t *q)
{
  return q->head != NULL && !q->draining;
}

/* Appends item to q (q joins p's list if it was empty). */
void hpam_pending_push(hpam_pending_t *p, hpam_pending_queue_t *q, hpam_pending_item_t *item);

/* What the front end's send says of one queued item (hpam_pending_drain). */
enum hpam_pending_result {
  HPAM_PENDING_SENT = 0,  /* it went (or failed for good): it leaves the queue */
  HPAM_PENDING_WAIT = 1,  /* not now: it stays first, the queue's turn ends */
  HPAM_PENDING_PARTLY = 2 /* partly sent: it stays first, counted, the turn ends */
};
typedef int (*hpam_pending_send_fn)(hpam_pending_item_t *item, void *ctx);

/* Sends queued items queue by queue, each queue in order until `send` says
 * wait. The item is taken off its queue before `send` (which may complete
 * it, and queue new sends) and put back first on WAIT or PARTLY. Queues
 * left empty leave the list. Returns the items sent (PARTLY counts). */
unsigned hpam_pending_drain(hpam_pending_t *p, hpam_pending_send_fn send, void *ctx);

/* Empties q, handing each item in order to `drop` (may be NULL), and takes
 * q off p's list: the endpoint is purged or goes away. */
void hpam_pending_purge(hpam_pending_t *p, hpam_pending_queue_t *q,
                        void (*drop)(hpam_pending_item_t *item, void *ctx), void *ctx);

/* ---- hpam_rdma_ops: deposit operations in flight -------------------------- */

/* The head of a front end's operation record (its own fields follow). */
typedef struct hpam_rdma_op {
  hpam_dep_handle_t handle; /* the deposit operation */
  void *owner;              /* the front end's endpoint; NULL once orphaned */
  uint64_t issued;          /* the table's count of operations when taken */
} hpam_rdma_op_t;

typedef struct hpam_rdma_ops {
  hpam_dep_t *dep;        /* the deposit card the operations run on */
  unsigned char *records; /* [capacity] records of stride bytes */
  size_t stride;
  uint32_t capacity;
  uint32_t nfree;     /* free records, indices in free_list[0..nfree) */
  uint32_t ninflight; /* in flight, indices in inflight[0..ninflight) */
  uint32_t *free_list, *inflight;
  uint64_t issued; /* operations taken so far */
  uint64_t events; /* hpam_dep_events when progress last tested them */
} hpam_rdma_ops_t;

/* capacity records of record_size bytes (at least sizeof(hpam_rdma_op_t),
 * the front end's record starting with one). HPAM_ERR_INVALID,
 * HPAM_ERR_NO_RESOURCE. */
int hpam_rdma_ops_init(hpam_rdma_ops_t *t, hpam_dep_t *dep, unsigned capacity, size_t record_size);
void hpam_rdma_ops_fini(hpam_rdma_ops_t *t);

static inline unsigned hpam_rdma_ops_free(const hpam_rdma_ops_t *t) { return t->nfree; }
static inline unsigned hpam_rdma_ops_inflight(const hpam_rdma_ops_t *t) { return t->ninflight; }
/* Operations taken so far: a flush waits for those taken before its count. */
static inline uint64_t hpam_rdma_ops_issued(const hpam_rdma_ops_t *t) { return t->issued; }

/* A record for a new operation of `owner` (NULL when all are in use); the
 * front end issues the deposit into op->handle, then calls track, or give
 * if the issue failed. */
hpam_rdma_op_t *hpam_rdma_op_take(hpam_rdma_ops_t *t, void *owner);
void hpam_rdma_op_give(hpam_rdma_ops_t *t, hpam_rdma_op_t *op);

/* The deposit was issued: 0 when it is now in flight (progress finishes it),
 * else its final state (> 0 done, < 0 HPAM_ERR_*): the front end finishes it
 * at once and gives the record back. */
int hpam_rdma_op_track(hpam_rdma_ops_t *t, hpam_rdma_op_t *op);

/* Called for each operation that finished (state > 0 done, < 0 error): it
 * is out of the in-flight set; the callee gives the record back (before any
 * user callback, which may start operations). */
typedef void (*hpam_rdma_finish_fn)(hpam_rdma_op_t *op, int state, void *ctx);

/* Tests the operations in flight and finishes those done (only when the
 * deposit layer's events moved since it last tested). Returns how many. */
unsigned hpam_rdma_ops_progress(hpam_rdma_ops_t *t, hpam_rdma_finish_fn finish, void *ctx);

/* Whether an operation of `owner` (any owner: NULL) taken before the count
 * `before` is still in flight. */
int hpam_rdma_ops_busy(const hpam_rdma_ops_t *t, const void *owner, uint64_t before);

/* `owner` goes away: each of its operations in flight loses its owner and is
 * handed to `orphan` (which drops what points into the owner); it finishes
 * unobserved later (finish sees owner NULL). */
void hpam_rdma_ops_orphan(hpam_rdma_ops_t *t, const void *owner,
                          void (*orphan)(hpam_rdma_op_t *op, void *ctx), void *ctx);

/* At close: serves the deposit card and finishes operations until none is
 * in flight or timeout_ns passed (a dead peer must not hang the close).
 * Returns the operations still in flight. */
unsigned hpam_rdma_ops_settle(hpam_rdma_ops_t *t, uint64_t timeout_ns, hpam_rdma_finish_fn finish,
                              void *ctx);

/* ---- hpam_send_now: the small-message send without the library's frame -- */

/* hpam_send_medium_now, called by the front end itself: the function of
 * the endpoint's ops table and the endpoint object it takes, bound once
 * (they never change for the endpoint's life), so a send is one indirect
 * call into the protocol instead of a call into the C API that makes it.
 * The front end vouches for its pointers, as memcpy's caller does: head and
 * body point at head_len and body_len bytes (NULL only for a length of 0);
 * the bound send does not look for a null one (the ops table's
 * medium_now_bound). Every other check of hpam_send_medium_now stays. */
typedef int (*hpam_send_now_fn)(void *impl, int dest, unsigned handler, const void *head,
                                size_t head_len, const void *body, size_t body_len,
                                uint64_t arg);
typedef struct hpam_send_now {
    hpam_send_now_fn send; /* the ops table's medium_now_bound (guarded when the endpoint is) */
    void *impl;            /* the endpoint object it is called on */
} hpam_send_now_t;

/* Binds `out` to ep's small-message send. HPAM_ERR_INVALID for a NULL. */
int hpam_send_now_bind(hpam_ep_t *ep, hpam_send_now_t *out);

/* What hpam_send_medium_now does with a result that is not HPAM_OK, and
 * hpam_poll with a negative one (the error's text kept for hpam_last_error);
 * returns rc. */
int hpam_send_now_failed(hpam_ep_t *ep, int rc);

/* hpam_send_medium_now(ep, ...) through the binding `s` of ep: the same
 * arguments, result and effects, for pointers the caller vouches for. */
static inline int hpam_send_now(hpam_ep_t *ep, const hpam_send_now_t *s, int dest,
                                unsigned handler, const void *head, size_t head_len,
                                const void *body, size_t body_len, uint64_t arg)
{
    const int rc = s->send(s->impl, dest, handler, head, head_len, body, body_len, arg);
    return __builtin_expect(HPAM_OK == rc, 1) ? rc : hpam_send_now_failed(ep, rc);
}

/* ---- hpam_poll_now: the poll without the library's frame -------------- */

/* hpam_poll, called by the front end itself: the ops table's poll and the
 * endpoint object, bound once as hpam_send_now's send is, so a progress call
 * makes one indirect call into the protocol (an idle one: the heartbeat, the
 * look at the card, the timeout walk's step) instead of a call into the C
 * API that makes it. */
typedef int (*hpam_poll_now_fn)(void *impl, bool report);
typedef struct hpam_poll_now {
    hpam_poll_now_fn poll; /* the ops table's poll (guarded when the endpoint is) */
    void *impl;            /* the endpoint object it is called on */
} hpam_poll_now_t;

/* Binds `out` to ep's poll. HPAM_ERR_INVALID for a NULL. */
int hpam_poll_now_bind(hpam_ep_t *ep, hpam_poll_now_t *out);

/* hpam_poll(ep) through the binding `s` of ep: the same result and effects
 * (an error's text kept for hpam_last_error, by hpam_send_now_failed). */
static inline int hpam_poll_now(hpam_ep_t *ep, const hpam_poll_now_t *s)
{
    const int rc = s->poll(s->impl, true);
    return __builtin_expect(rc >= 0, 1) ? rc : hpam_send_now_failed(ep, rc);
}

/* ---- the UCX transport's knob defaults ---------------------------------- */

/* The knobs whose default the UCX transport sets apart from the knob
 * table's (the BTL sets its own, btl_hpam_param_info.c); here, where both
 * front ends see them, so that README's table of the BTL's parameters
 * (btl_hpam_param_table.c) shows UCX's too. UCX streams active messages
 * (its rendezvous, tag matching and ucx_perftest's am_bw keep many in
 * flight to one peer) and calls progress in a loop: D is the window of
 * unanswered messages per peer (the table's D = 4, Medusa's, held a stream
 * to four messages per acknowledgement round trip), and a poll that hands
 * back after one packet pays the whole progress call (the memory domain's
 * card, the deposits in flight) per message. docs/decisions.md, issue 26:
 * am_bw short 8 B over Hamlyn 0.44-0.59 -> 0.30-0.37 us (posix 0.16). */
#define HPAM_UCX_DEFAULT_DEPTH 16
#define HPAM_UCX_DEFAULT_RECEIVE_BUDGET 16

/* Knob i's default in the UCX transport. */
static inline hpam_knob_value_t hpam_ucx_knob_default(size_t i)
{
    hpam_knob_value_t d = hpam_knob_default(i);
    if (0 == strcmp(hpam_knob_info(i)->name, "depth")) d.i = HPAM_UCX_DEFAULT_DEPTH;
    if (0 == strcmp(hpam_knob_info(i)->name, "receive_budget")) {
        d.i = HPAM_UCX_DEFAULT_RECEIVE_BUDGET;
    }
    return d;
}

#ifdef __cplusplus
}
#endif

#endif /* HPAM_FRONTEND_H */
