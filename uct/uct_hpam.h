/*
 * uct/hpam: a UCX transport (UCT component "hpam", one memory domain, one
 * transport "hpam") whose interface runs the unchanged HPAM D-way
 * request-reply protocol over an emulated Medusa or Hamlyn card, with put,
 * get and atomics as Hamlyn deposits and hybrid deposit operations.
 *
 * It is built against the internal headers of the installed UCX version
 * (configure: --with-ucx-src) and uses only the public HPAM headers
 * hpam_am.h and hpam_deposit.h. Debian's libuct loads only the modules it
 * was built with, so the component registers itself from a constructor and
 * is loaded with LD_PRELOAD=libuct_hpam.so.
 *
 * Files: uct_hpam_md.c (component, memory domain, registration, rkeys),
 * uct_hpam_md_config.c (UCX_HPAM_* variables and their checks), uct_hpam_iface.c
 * (interface: query, addresses, progress, lost peers, help between
 * interfaces), uct_hpam_iface_open.c (opening and closing an interface),
 * uct_hpam_ep.c (endpoints, pending queues), uct_hpam_am.c (active messages
 * in order over the D-way protocol), uct_hpam_rma.c (put, get, atomics),
 * uct_hpam_flush.c (flush, fence and the marks after puts by packets),
 * uct_hpam_registry.c (job membership), uct_hpam_rkey.c (rkey wire format).
 * In-order delivery, the pending queues and the deposit operations in flight
 * are the front ends' shared services (hpam_frontend.h), which the Open MPI
 * BTL uses too; these files adapt them to UCX.
 *
 * UCX's own config.h (its build configuration, from `ucx_info -b`) is forced
 * into every file by the build (-include), before any UCX header.
 */
#pragma once

#include <uct/base/uct_iface.h>
#include <uct/base/uct_iov.inl>
#include <uct/base/uct_md.h>
#include <ucs/arch/cpu.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/queue.h>
#include <ucs/sys/math.h>

#include "hpam_am.h"
#include "hpam_deposit.h"
#include "hpam_frontend.h"
#include "uct_hpam_registry.h"
#include "uct_hpam_rkey.h"

#define UCT_HPAM_NAME "hpam"
#define UCT_HPAM_CONFIG_PREFIX "HPAM_"

/* Handler indices on the active-message layer (the same in every process). */
enum {
    UCT_HPAM_HANDLER_AM = 1,         /* bulk request: one UCX active message */
    UCT_HPAM_HANDLER_HELLO = 2,      /* request: attach my deposit card      */
    UCT_HPAM_HANDLER_HELLO_REPLY = 3 /* its reply: attached or not           */
};

/* Operations with a deposit handle in flight on one interface, and bounce
 * buffers for the buffered (bcopy/short) put and get. */
#define UCT_HPAM_MAX_OPS 512
#define UCT_HPAM_BOUNCE_BUFS 64
#define UCT_HPAM_BOUNCE_SIZE 8192
/* Flush requests with a completion waiting at once on one interface. */
#define UCT_HPAM_MAX_FLUSH_WAITERS 256
/* The memory domain's deposit card attaches only cards whose owners have
 * just announced them (the hello): a short wait is enough. */
#define UCT_HPAM_MD_ATTACH_TIMEOUT_MS 1000
/* An interface's progress looks at the process's other hpam interfaces once
 * in this many calls (uct_hpam_iface.c, "help"). */
#define UCT_HPAM_HELP_PERIOD 256
/* Most pieces an am_short_iov gathers into one packet. */
#define UCT_HPAM_AM_MAX_IOV 8
/* Performance estimates UCP weighs transports by (iface_query), measured
 * with ucx_perftest over hpam (bench/RESULTS.md, "UCX transport"). */
#define UCT_HPAM_LATENCY 0.3e-6                 /* seconds, one way (am_lat, 8 B) */
#define UCT_HPAM_BANDWIDTH (4400.0 * UCS_MBYTE) /* bytes per second (get zcopy, 64 KiB) */
#define UCT_HPAM_OVERHEAD 170e-9                /* seconds per message (am_bw, 8 B) */

/* The transport's own table holds only UCX's base interface fields; the
 * hpam knobs are the memory domain's (one set of values per domain). */
typedef struct uct_hpam_iface_config {
    uct_iface_config_t super;
} uct_hpam_iface_config_t;

/* Room for the knob table's knobs (hpam_knobs.h); a larger table leaves the
 * transport unregistered, with an error. */
#define UCT_HPAM_MAX_KNOBS 48

/* Every knob, validated (uct_hpam_md_config.c). */
typedef struct uct_hpam_params {
    hpam_config_t am;                   /* the active-message card and protocol */
    hpam_dep_config_t dep;              /* the deposit cards                    */
    uct_hpam_job_shape_t shape;         /* what every process of the job shares */
    char job[64];                       /* the core's job id: "ucx-" + UCX_HPAM_JOB's tag */
    uint64_t job_hash;                  /* FNV-1a of job: in addresses and rkeys */
    int stats;                          /* print counters when an interface closes */
    char words[UCT_HPAM_MAX_KNOBS][32]; /* values of word knobs (am.nic points here) */
} uct_hpam_params_t;

typedef struct uct_hpam_md {
    uct_md_t super;
    uct_hpam_params_t params;
    /* The deposit card that holds this domain's registrations (made on first
     * need). Several interfaces may serve it: `lock` (try-lock in progress). */
    hpam_dep_t *dep;
    hpam_dep_quiet_t quiet; /* dep's "nothing to do" words, bound when dep is made */
    int dep_proc;           /* its process index in the job, -1 before */
    int lock;               /* 0 free, 1 held (atomic) */
    unsigned registrations;
} uct_hpam_md_t;

/* The UCX interface address: which card, in which job. */
typedef struct uct_hpam_iface_addr {
    uint64_t job_hash; /* same job = same registry, key and card shape */
    uint32_t proc;     /* the interface's active-message card (and initiator deposit card) */
    uint32_t md_proc;  /* its memory domain's deposit card (rkeys name it) */
} UCS_S_PACKED uct_hpam_iface_addr_t;

/* What an interface knows of one process of the job (the numbers of the
 * ordered streams both ways are in iface->order). */
typedef struct uct_hpam_peer {
    /* Sender side: the answers to my active messages to it. */
    uint32_t unacked;    /* lowest sequence number not yet answered */
    uint64_t acked_mask; /* answered out of order: bit (seq - unacked) */
    /* Connection state. */
    uint8_t connected;    /* its active-message card is attached */
    uint8_t dep_attached; /* its memory domain's deposit card is attached to mine */
    uint8_t hello;        /* enum uct_hpam_hello */
    uint8_t lost;         /* given up on: every operation to it fails */
    uint8_t reported;     /* its loss was reported to UCX */
    uint32_t md_proc;     /* its memory domain's deposit card */
} uct_hpam_peer_t;

enum uct_hpam_hello {
    UCT_HPAM_HELLO_NONE,
    UCT_HPAM_HELLO_WANTED,
    UCT_HPAM_HELLO_SENT,
    UCT_HPAM_HELLO_DONE,
    UCT_HPAM_HELLO_FAILED
};

/* An operation on the deposit layer with a handle (uct_hpam_rma.c). */
typedef struct uct_hpam_op {
    hpam_rdma_op_t head;          /* deposit handle; owner: the endpoint (NULL once gone) */
    uct_completion_t *comp;       /* called when done (may be NULL) */
    uint64_t fetched;             /* old value of a fetching atomic */
    void *result;                 /* where the fetched value goes */
    uct_unpack_callback_t unpack; /* get_bcopy: hands the bounce buffer out */
    void *unpack_arg;
    uint32_t length; /* get_bcopy bytes */
    int16_t bounce;  /* bounce buffer held, or -1 */
    uint8_t width;   /* 4 or 8 for a fetching atomic, else 0 */
} uct_hpam_op_t;

/* A flush waiting for operations issued before it. */
typedef struct uct_hpam_flush_waiter {
    struct uct_hpam_ep *ep; /* NULL: the whole interface */
    uct_completion_t *comp;
    uint64_t ops_before; /* operations issued before the flush */
    uint32_t seq_before; /* ep: its peer's next_seq at the flush */
} uct_hpam_flush_waiter_t;

typedef struct uct_hpam_iface {
    uct_base_iface_t super;
    uct_hpam_md_t *md;
    hpam_ep_t *am;            /* HPAM endpoint over the active-message card */
    hpam_send_now_t send_now; /* its small-message send, bound once (hpam_frontend.h) */
    hpam_poll_now_t poll_now; /* and its poll */
    hpam_dep_t *dep;          /* initiator deposit card (put, get, atomics) */
    int proc;                 /* my index in the job */
    int nprocs;               /* UCX_HPAM_MAX_PROCS */
    uint32_t window;          /* messages in flight per peer = D */
    size_t max_bulk;          /* largest active message */
    uct_hpam_peer_t *peers;   /* [nprocs] */
    hpam_order_t order;       /* the active-message streams to and from each peer */
    unsigned hello_wanted;    /* peers with hello == WANTED */
    unsigned lost_unreported; /* peers lost, not yet reported to UCX */
    int closing;              /* arrivals are answered, not handed to UCX */
    uint8_t *am_scratch;      /* one payload: am_short_iov gathers, a bcopy to myself packs */
    ucs_list_link_t eps;      /* every endpoint */
    hpam_pending_t pending;   /* endpoints with queued requests */
    int fenced;               /* iface fence: wait for everything before it */
    uint64_t fence_ops;       /* operations issued before the fence */
    hpam_rdma_ops_t ops;      /* deposit operations in flight (uct_hpam_op_t) */
    unsigned unmarked_eps;    /* endpoints with ep->unmarked set */
    uint64_t mark_sink;       /* where marks' bytes land */
    uint8_t *bounce;          /* [UCT_HPAM_BOUNCE_BUFS][UCT_HPAM_BOUNCE_SIZE] */
    int16_t bounce_free[UCT_HPAM_BOUNCE_BUFS], bounce_nfree;
    uct_hpam_flush_waiter_t waiters[UCT_HPAM_MAX_FLUSH_WAITERS];
    unsigned nwaiters;
    /* Help between the interfaces of one process (uct_hpam_iface.c): a user
     * waiting on one interface (osc ucx's worker) must not starve another's
     * retransmissions (pml ucx's). */
    ucs_list_link_t process_link; /* in the process's list of interfaces */
    int am_busy;                  /* atomic: the owner or a helper is inside `am` */
    unsigned am_depth;            /* the owner's nesting of uct_hpam_am_enter */
    uint64_t progress_calls;      /* atomic: calls of this interface's progress */
    uint64_t progress_seen;       /* progress_calls when a helper last looked */
    /* Counters (printed with UCX_HPAM_STATS=y). */
    uint64_t helped;      /* timeout walks done by another interface's progress */
    uint64_t am_rejected; /* arrived with a bad id, sequence or flags */
    uint64_t am_stashed;  /* arrived early and were held for order */
    uint64_t no_resource; /* sends answered with UCS_ERR_NO_RESOURCE */
} uct_hpam_iface_t;

typedef struct uct_hpam_ep {
    uct_base_ep_t super;
    int peer;                     /* its process index */
    uint32_t remote_md;           /* its memory domain's deposit card */
    hpam_pending_queue_t pending; /* uct_pending_req_t, in order (item in req->priv) */
    ucs_list_link_t list;         /* in iface->eps */
    int fenced;                   /* wait for everything before the fence */
    uint32_t fence_seq;           /* its peer's next sequence number at the fence */
    int failed;                   /* its peer was lost */
    /* Puts that went as packets are "sent" once in the owner's inbound FIFO,
     * deposited only when the owner polls: a flush or fence then asks for one
     * byte of the same registration (the mark), answered after them. */
    int unmarked;              /* a put went by packets since the last mark */
    hpam_ticket_t mark_ticket; /* where the last such put went */
    uint64_t mark_offset;
} uct_hpam_ep_t;

/* The owner's way into iface->am (sends, connect, poll): waits while a
 * helper walks its timeouts (a short walk; helpers never wait), and nests
 * (a handler inside the poll may send). */
static inline void uct_hpam_am_enter(uct_hpam_iface_t *iface)
{
    if (iface->am_depth++ != 0) return;
    while (__atomic_exchange_n(&iface->am_busy, 1, __ATOMIC_ACQUIRE)) {
        ucs_arch_wait_mem(&iface->am_busy);
    }
}

static inline void uct_hpam_am_leave(uct_hpam_iface_t *iface)
{
    if (--iface->am_depth == 0) __atomic_store_n(&iface->am_busy, 0, __ATOMIC_RELEASE);
}

static inline uct_hpam_iface_t *uct_hpam_iface_of(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_hpam_iface_t);
}

/* uct_hpam_md.c */
extern uct_component_t uct_hpam_component;
ucs_status_t uct_hpam_md_dep_ready(uct_hpam_md_t *md);
int uct_hpam_md_trylock(uct_hpam_md_t *md);
void uct_hpam_md_lock(uct_hpam_md_t *md);
void uct_hpam_md_unlock(uct_hpam_md_t *md);
/* The one place an HPAM error code becomes a UCS status. */
ucs_status_t uct_hpam_status(int hpam_err);

/* uct_hpam_md_config.c */
extern ucs_config_field_t uct_hpam_md_config_table[];
typedef struct uct_hpam_md_config uct_hpam_md_config_t;
size_t uct_hpam_md_config_size(void);
/* Fills uct_hpam_md_config_table from the knob table; -1 if it has more
 * than UCT_HPAM_MAX_KNOBS knobs. */
int uct_hpam_md_config_build(void);
/* Validates the configuration into params; on error returns
 * UCS_ERR_INVALID_PARAM after one line naming the UCX_HPAM_* variable. */
ucs_status_t uct_hpam_params_from_config(const uct_md_config_t *config, uct_hpam_params_t *p);

/* uct_hpam_iface.c */
extern ucs_config_field_t uct_hpam_iface_config_table[];
extern uct_iface_ops_t uct_hpam_iface_ops;
ucs_status_t uct_hpam_query_devices(uct_md_h md, uct_tl_device_resource_t **devices,
                                    unsigned *count);
unsigned uct_hpam_iface_progress(uct_iface_h tl_iface);
ucs_status_t uct_hpam_iface_connect_peer(uct_hpam_iface_t *iface, int peer, uint32_t md_proc);
/* The process's list of interfaces that help each other (joined once the
 * cards exist, left before they go). */
void uct_hpam_iface_join_process(uct_hpam_iface_t *iface);
void uct_hpam_iface_leave_process(uct_hpam_iface_t *iface);
/* The hello done at once for a peer interface in this process; 1 if so. */
int uct_hpam_attach_in_process(uct_hpam_iface_t *iface, int peer);
/* A peer was given up on: noted at once (every operation to it fails),
 * reported to UCX (error naming it, endpoints failed) from progress. */
void uct_hpam_iface_note_lost(uct_hpam_iface_t *iface, int peer);

/* uct_hpam_iface_open.c */
ucs_status_t uct_hpam_iface_open(uct_md_h md, uct_worker_h worker, const uct_iface_params_t *params,
                                 const uct_iface_config_t *config, uct_iface_h *iface_p);
void uct_hpam_iface_close(uct_iface_h tl_iface);

/* uct_hpam_ep.c */
extern ucs_class_t UCS_CLASS_NAME(uct_hpam_ep_t);
ucs_status_t uct_hpam_ep_create(const uct_ep_params_t *params, uct_ep_h *ep_p);
void uct_hpam_ep_destroy(uct_ep_h tl_ep);
ucs_status_t uct_hpam_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags);
void uct_hpam_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_hpam_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
unsigned uct_hpam_dispatch_pending(uct_hpam_iface_t *iface);
/* UCS_OK when a new operation may start on ep now; otherwise the status to
 * return (UCS_ERR_NO_RESOURCE: queue it; an error: the peer is lost). */
ucs_status_t uct_hpam_ep_may_send(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep);
/* 1 when uct_hpam_ep_may_send has nothing to say: the endpoint has not
 * failed and nothing is queued or fenced before a send on it. */
static inline int uct_hpam_ep_clear(const uct_hpam_iface_t *iface, const uct_hpam_ep_t *ep)
{
    return !ep->failed && !hpam_pending_holds_back(&ep->pending) && !ep->fenced && !iface->fenced;
}
void uct_hpam_ep_fail_all(uct_hpam_iface_t *iface, int peer);

/* uct_hpam_am.c */
ucs_status_t uct_hpam_am_init(uct_hpam_iface_t *iface);
ucs_status_t uct_hpam_ep_am_short(uct_ep_h ep, uint8_t id, uint64_t header, const void *payload,
                                  unsigned length);
ucs_status_t uct_hpam_ep_am_short_iov(uct_ep_h ep, uint8_t id, const uct_iov_t *iov, size_t iovcnt);
ssize_t uct_hpam_ep_am_bcopy(uct_ep_h ep, uint8_t id, uct_pack_callback_t pack_cb, void *arg,
                             unsigned flags);
void uct_hpam_send_hellos(uct_hpam_iface_t *iface);
/* The id of the empty message a zero-length put or get sends (not a UCX id). */
#define UCT_HPAM_PROBE_ID UCT_AM_ID_MAX
ucs_status_t uct_hpam_am_probe(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep);
/* Hands over the messages this interface sent to itself (from progress). */
unsigned uct_hpam_am_deliver_self(uct_hpam_iface_t *iface);

/* uct_hpam_rma.c */
ucs_status_t uct_hpam_rma_init(uct_hpam_iface_t *iface);
unsigned uct_hpam_rma_progress(uct_hpam_iface_t *iface);
void uct_hpam_rma_orphan(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, ucs_status_t status);
/* At close: finishes what is in flight (bounded by the give-up time). */
void uct_hpam_rma_close(uct_hpam_iface_t *iface);
/* A record for a new deposit operation of ep (one must be free), and the
 * issue's result: UCS_OK when done (or nothing waits: no completion),
 * UCS_INPROGRESS when comp will be called, or the error. */
uct_hpam_op_t *uct_hpam_op_new(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, uct_completion_t *comp);
ucs_status_t uct_hpam_op_started(uct_hpam_iface_t *iface, uct_hpam_op_t *op, int rc);
ucs_status_t uct_hpam_ep_put_short(uct_ep_h ep, const void *buffer, unsigned length,
                                   uint64_t remote_addr, uct_rkey_t rkey);
ssize_t uct_hpam_ep_put_bcopy(uct_ep_h ep, uct_pack_callback_t pack_cb, void *arg,
                              uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_hpam_ep_put_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_hpam_ep_get_bcopy(uct_ep_h ep, uct_unpack_callback_t unpack_cb, void *arg,
                                   size_t length, uint64_t remote_addr, uct_rkey_t rkey,
                                   uct_completion_t *comp);
ucs_status_t uct_hpam_ep_get_zcopy(uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt,
                                   uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_hpam_ep_atomic_cswap64(uct_ep_h ep, uint64_t compare, uint64_t swap,
                                        uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result,
                                        uct_completion_t *comp);
ucs_status_t uct_hpam_ep_atomic_cswap32(uct_ep_h ep, uint32_t compare, uint32_t swap,
                                        uint64_t remote_addr, uct_rkey_t rkey, uint32_t *result,
                                        uct_completion_t *comp);
ucs_status_t uct_hpam_ep_atomic64_post(uct_ep_h ep, unsigned opcode, uint64_t value,
                                       uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_hpam_ep_atomic32_post(uct_ep_h ep, unsigned opcode, uint32_t value,
                                       uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_hpam_ep_atomic64_fetch(uct_ep_h ep, uct_atomic_op_t opcode, uint64_t value,
                                        uint64_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);
ucs_status_t uct_hpam_ep_atomic32_fetch(uct_ep_h ep, uct_atomic_op_t opcode, uint32_t value,
                                        uint32_t *result, uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);

/* uct_hpam_flush.c */
ucs_status_t uct_hpam_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_hpam_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_hpam_iface_flush(uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_hpam_iface_fence(uct_iface_h tl_iface, unsigned flags);
/* UCS_OK once ep's and the interface's fences are passed (then cleared),
 * else UCS_ERR_NO_RESOURCE (may issue the mark a fence waits for). */
ucs_status_t uct_hpam_fence_wait(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep);
/* A put to (ticket, offset) of rkey's owner has started: if it travels as
 * packets, ep needs a mark before a flush or fence may call it done. */
void uct_hpam_put_started(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, const uct_hpam_rkey_t *rkey,
                          uint64_t offset);
/* Completes the flushes that waited and are done now (from progress). */
unsigned uct_hpam_flush_progress(uct_hpam_iface_t *iface);
/* ep goes away or fails: its waiting flushes complete with status. */
void uct_hpam_flush_drop_waiters(uct_hpam_iface_t *iface, uct_hpam_ep_t *ep, ucs_status_t status);
