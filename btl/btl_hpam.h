/*
 * btl/hpam: an Open MPI byte transfer layer whose sends are HPAM active
 * messages (requests carrying the BTL tag, dispatched at the receiver to the
 * registered callback, acknowledged by the layer) over an emulated Medusa or
 * Hamlyn card in shared memory.
 *
 * Files, as Open MPI splits a BTL: btl_hpam_component.c (component table,
 * init, progress), btl_hpam_params.c (MCA parameters and their validation),
 * btl_hpam_module.c (module table, procs, finalize), btl_hpam_frag.c (send
 * fragments: bounded free list, alloc, free, prepare_src),
 * btl_hpam_send.c (send, sendi, the pending queue), btl_hpam_order.c (the
 * receive handler: in-order delivery per peer), btl_hpam_rdma.c (put, get,
 * atomics and memory registration as Hamlyn deposits and hybrid deposit
 * operations), btl_hpam_error.c (HPAM errors as OPAL errors, a lost peer),
 * btl_hpam_mpit.c (MPI_T performance variables, statistics at finalize).
 * In-order delivery, the pending queues and the deposit operations in flight
 * are the front ends' shared services (hpam_frontend.h), which the UCX
 * transport uses too; these files adapt them to Open MPI.
 */
#ifndef MCA_BTL_HPAM_H
#define MCA_BTL_HPAM_H

#include "opal_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/threads/mutex.h"
#include "opal/util/proc.h"

#include "hpam_am.h"
#include "hpam_deposit.h"
#include "hpam_frontend.h"
#include "hpam_knobs.h"
#include "btl_hpam_param_info.h"

BEGIN_C_DECLS

/* The one handler index the BTL uses on the active-message layer. */
#define MCA_BTL_HPAM_HANDLER 1

/* What MCA parsed for one knob of the table (hpam_knobs.h), by its type. */
typedef union mca_btl_hpam_knob_storage_t {
    long whole;  /* HPAM_KNOB_UNSIGNED, HPAM_KNOB_POWER2 */
    bool flag;   /* HPAM_KNOB_BOOL */
    double real; /* HPAM_KNOB_REAL */
    char *word;  /* HPAM_KNOB_CHOICE */
} mca_btl_hpam_knob_storage_t;
#define MCA_BTL_HPAM_MAX_KNOBS 64

/* The parameters: every knob of the table as btl_hpam_<name>, checked by
 * mca_btl_hpam_params_check into the two configurations; four of the BTL's
 * own. */
typedef struct mca_btl_hpam_params_t {
    mca_btl_hpam_knob_storage_t knob[MCA_BTL_HPAM_MAX_KNOBS]; /* by table index */
    hpam_config_t am;      /* the active-message endpoint's configuration */
    hpam_dep_config_t dep; /* the deposit layer's */
    int verbose;           /* errors only .. everything */
    bool stats;            /* per-peer statistics at finalize */
    int max_frags;         /* send fragments at most (bounds memory under overload) */
    int card_budget_mb;    /* card memory per process the default depth stays within */
} mca_btl_hpam_params_t;

/* A peer on this node, by its local rank (its card's process index). */
struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    struct opal_proc_t *proc;     /* the Open MPI process */
    int peer;                     /* local rank = process index on the AM layer */
    hpam_pending_queue_t pending; /* frags waiting to be sent, in order */
    uint64_t refused_at;          /* the component's polls when a send to the peer was last
                                   * refused (busy): until the next poll it would be again */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_base_endpoint_t);

/* A send fragment: a descriptor and room for one packet's payload. */
typedef struct mca_btl_hpam_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[2];
    struct mca_btl_base_endpoint_t *endpoint;
    mca_btl_base_tag_t tag;                /* set when queued by send */
    hpam_pending_item_t pending_item;      /* in its endpoint's pending queue */
    unsigned char *data;                   /* the payload area right behind this struct */
    struct mca_btl_hpam_frag_t *next_free; /* free stack link */
} mca_btl_hpam_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_hpam_frag_t);

/* What a peer needs to deposit into memory registered here: the Hamlyn
 * ticket of the slot and the virtual address the slot starts at. */
struct mca_btl_base_registration_handle_t {
    hpam_ticket_t ticket;
    uint64_t base;
};

/* A put, get or atomic in flight on the deposit layer. */
#define MCA_BTL_HPAM_MAX_RDMA_OPS 1024
typedef struct mca_btl_hpam_rdma_op_t {
    hpam_rdma_op_t head;                      /* deposit handle; owner: the endpoint */
    mca_btl_base_rdma_completion_fn_t cbfunc; /* Open MPI's completion */
    void *cbcontext, *cbdata;
    void *local_address; /* for the callback; fetched value goes here */
    mca_btl_base_registration_handle_t *local_handle;
    uint64_t fetched; /* old value of a fetching atomic */
    int fetch_width;  /* 0: no fetched value, else 4 or 8 */
} mca_btl_hpam_rdma_op_t;

typedef struct mca_btl_hpam_module_t {
    mca_btl_base_module_t super;
    mca_btl_base_module_error_cb_fn_t error_cb; /* ob1's, for a lost peer */
} mca_btl_hpam_module_t;

typedef struct mca_btl_hpam_component_t {
    mca_btl_base_component_3_0_0_t super;
    mca_btl_hpam_params_t params;
    hpam_ep_t *ep;            /* this process's endpoint, made at init */
    hpam_send_now_t send_now; /* its small-message send, bound at init (btl_hpam_send.c) */
    hpam_poll_now_t poll_now; /* its poll, bound at init (mca_btl_hpam_poll) */
    int nlocal;               /* processes of the job on this node */
    int my_local_rank;
    struct mca_btl_base_endpoint_t **peers; /* by local rank, NULL until add_procs */
    mca_btl_hpam_frag_t *free_frags;        /* stack of free send fragments */
    void **frag_chunks;                     /* malloc'd chunks of fragments, freed at close */
    int nchunks;
    int nfrags;                  /* fragments made, at most params.max_frags */
    size_t frag_stride;          /* bytes per fragment: struct + max_send_size */
    unsigned char *pack_buffer;  /* sendi packs non-contiguous data here */
    uint64_t frag_exhausted;     /* allocs refused: every fragment in use */
    uint64_t sendi_refused;      /* sendi calls refused for now (OUT_OF_RESOURCE) */
    uint64_t polls;              /* hpam_poll calls made by progress (from 1) */
    hpam_pending_t pending;      /* endpoints whose pending queue is not empty;
                                  * .pushed: sends that waited on their queue */
    opal_recursive_mutex_t lock; /* MPI_THREAD_MULTIPLE only */
    bool lost_peer_reported;     /* the give-up error went out once */
    hpam_dep_t *dep;             /* sender-based deposit: put, get, atomics */
    hpam_dep_quiet_t dep_quiet;  /* its "nothing to do" words, bound at init (progress) */
    hpam_rdma_ops_t rdma_ops;    /* puts, gets and atomics in flight */
    int registrations;           /* live register_mem handles */
    hpam_order_t order;          /* in-order delivery per peer (btl_hpam_order.c);
                                  * held_total and rejected are MPI_T counters */
    char job[96];                /* job id shared by the node's processes */
} mca_btl_hpam_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_hpam_component_t mca_btl_hpam_component;
extern mca_btl_hpam_module_t mca_btl_hpam_module;

/* btl_hpam_params.c */
/* One poll of the AM endpoint, through the binding made at init (no call
 * into the C API's frame); counts it (component.polls), so that a send
 * refused before it is tried again after it (btl_hpam_send.c). Returns
 * hpam_poll's result. */
static inline int mca_btl_hpam_poll(void)
{
    const int n = hpam_poll_now(mca_btl_hpam_component.ep, &mca_btl_hpam_component.poll_now);
    mca_btl_hpam_component.polls++;
    return n;
}

int mca_btl_hpam_params_register(void);
int mca_btl_hpam_params_check(void);
/* Checks the BTL sizes (max_send_size, eager_limit, rndv_eager_limit)
 * against the largest packet payload: those the user did not set become
 * that payload (block size - 64), values the user set too large are errors
 * naming the parameter and range. */
int mca_btl_hpam_params_fit_sizes(mca_btl_base_module_t *m, size_t max_bulk);
/* The depth for nlocal ranks on the node, unless the user set it: halved
 * from its default (64) until the card's blocks fit btl_hpam_card_budget_mb,
 * never below 4. */
void mca_btl_hpam_params_fit_depth(int nlocal);

/* btl_hpam_error.c: the one HPAM -> OPAL error mapping; a lost peer, named */
int mca_btl_hpam_to_opal_error(int hpam_err);
void mca_btl_hpam_report_lost_peer(void);

/* btl_hpam_frag.c: send fragments from a free list of at most max_frags */
int mca_btl_hpam_frags_setup(size_t max_send_size);
void mca_btl_hpam_frags_release(void);
mca_btl_base_descriptor_t *mca_btl_hpam_alloc(struct mca_btl_base_module_t *btl,
                                              struct mca_btl_base_endpoint_t *endpoint,
                                              uint8_t order, size_t size, uint32_t flags);
int mca_btl_hpam_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
mca_btl_base_descriptor_t *mca_btl_hpam_prepare_src(struct mca_btl_base_module_t *btl,
                                                    struct mca_btl_base_endpoint_t *endpoint,
                                                    struct opal_convertor_t *convertor,
                                                    uint8_t order, size_t reserve, size_t *size,
                                                    uint32_t flags);

/* btl_hpam_send.c */
int mca_btl_hpam_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int mca_btl_hpam_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                       struct opal_convertor_t *convertor, void *header, size_t header_size,
                       size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                       mca_btl_base_descriptor_t **descriptor);
int mca_btl_hpam_drain_pending(void);

/* btl_hpam_order.c: each peer's messages are delivered in the order sent */
int mca_btl_hpam_order_init(int nlocal, int depth, size_t max_payload);
void mca_btl_hpam_order_fini(void);
void mca_btl_hpam_on_message(hpam_token_t *token, void *ctx, void *data, size_t len, uint64_t arg);
#define MCA_BTL_HPAM_TAG_BITS 8
/* The argument word of the next message to `peer`: sequence number and tag. */
static inline uint64_t mca_btl_hpam_order_arg(int peer, mca_btl_base_tag_t tag)
{
    return ((uint64_t)hpam_order_next_send(&mca_btl_hpam_component.order, peer)
            << MCA_BTL_HPAM_TAG_BITS) |
           tag;
}
/* That message was launched: the next one takes the next number. */
static inline void mca_btl_hpam_order_sent(int peer)
{
    hpam_order_sent(&mca_btl_hpam_component.order, peer);
}

/* btl_hpam_rdma.c */
int mca_btl_hpam_rdma_init(void);
int mca_btl_hpam_rdma_connect(int lrank);
int mca_btl_hpam_rdma_progress(void);
void mca_btl_hpam_rdma_fini(void);
extern const uint32_t mca_btl_hpam_atomic_flags;
struct mca_btl_base_registration_handle_t *
mca_btl_hpam_register_mem(struct mca_btl_base_module_t *btl,
                          struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                          uint32_t flags);
int mca_btl_hpam_deregister_mem(struct mca_btl_base_module_t *btl,
                                struct mca_btl_base_registration_handle_t *handle);
int mca_btl_hpam_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                     int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata);
int mca_btl_hpam_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                     int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata);
int mca_btl_hpam_atomic_op(struct mca_btl_base_module_t *btl,
                           struct mca_btl_base_endpoint_t *endpoint, uint64_t remote_address,
                           struct mca_btl_base_registration_handle_t *remote_handle,
                           mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_hpam_atomic_fop(struct mca_btl_base_module_t *btl,
                            struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                            uint64_t remote_address,
                            struct mca_btl_base_registration_handle_t *local_handle,
                            struct mca_btl_base_registration_handle_t *remote_handle,
                            mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                            mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                            void *cbdata);
int mca_btl_hpam_atomic_cswap(struct mca_btl_base_module_t *btl,
                              struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                              uint64_t remote_address,
                              struct mca_btl_base_registration_handle_t *local_handle,
                              struct mca_btl_base_registration_handle_t *remote_handle,
                              uint64_t compare, uint64_t value, int flags, int order,
                              mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                              void *cbdata);
int mca_btl_hpam_flush(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint);

/* btl_hpam_mpit.c */
int mca_btl_hpam_mpit_register(void);
void mca_btl_hpam_print_stats(void);

/* Serialise the layer under MPI_THREAD_MULTIPLE; a no-op otherwise. */
#define MCA_BTL_HPAM_LOCK()                                                                        \
    do {                                                                                           \
        if (opal_using_threads()) opal_mutex_lock(&mca_btl_hpam_component.lock);                   \
    } while (0)
#define MCA_BTL_HPAM_UNLOCK()                                                                      \
    do {                                                                                           \
        if (opal_using_threads()) opal_mutex_unlock(&mca_btl_hpam_component.lock);                 \
    } while (0)

END_C_DECLS

#endif /* MCA_BTL_HPAM_H */
