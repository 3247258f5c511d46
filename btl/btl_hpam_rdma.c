/*
 * put, get and atomics as sender-based deposits (Hamlyn tickets, hybrid
 * deposit operations). register_mem makes a Hamlyn slot with its own
 * protection key over the memory and the handle carries the ticket; a peer
 * deposits at (ticket, remote address - base). Each operation has a deposit
 * handle in the front ends' table of operations in flight (hpam_rdma_ops,
 * hpam_frontend.h); progress tests them and calls Open MPI's completion
 * callbacks. Atomics are atomic at the destination and coherent with CPU
 * atomics there, so the own rank's memory counts too (ATOMIC_SUPPORTS_GLOB).
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/util/output.h"

const uint32_t mca_btl_hpam_atomic_flags =
    MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND | MCA_BTL_ATOMIC_SUPPORTS_OR |
    MCA_BTL_ATOMIC_SUPPORTS_XOR | MCA_BTL_ATOMIC_SUPPORTS_SWAP | MCA_BTL_ATOMIC_SUPPORTS_CSWAP |
    MCA_BTL_ATOMIC_SUPPORTS_32BIT | MCA_BTL_ATOMIC_SUPPORTS_GLOB;

#define C (&mca_btl_hpam_component)

/* register_mem's handles: one per registration slot of the deposit card
 * (btl_hpam_max_registrations), taken from and given back to a stack, so
 * that the registration ob1 makes and drops per rendezvous allocates
 * nothing. */
static mca_btl_base_registration_handle_t *handle_pool;
static mca_btl_base_registration_handle_t **free_handles;
static uint32_t free_handle_count, handle_pool_size;

static int handles_init(uint32_t n)
{
    handle_pool = calloc(n, sizeof(*handle_pool));
    free_handles = calloc(n, sizeof(*free_handles));
    if (NULL == handle_pool || NULL == free_handles) {
        free(handle_pool);
        free(free_handles);
        handle_pool = NULL;
        free_handles = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (uint32_t i = 0; i < n; ++i) free_handles[i] = &handle_pool[n - 1 - i];
    free_handle_count = handle_pool_size = n;
    return OPAL_SUCCESS;
}

/* The pool stays while a handle is still out (a window never freed): Open
 * MPI may deregister it after the BTL's finalize. */
static void handles_fini(void)
{
    free(free_handles);
    free_handles = NULL;
    free_handle_count = handle_pool_size = 0;
    if (0 == C->registrations) free(handle_pool);
    handle_pool = NULL;
}

int mca_btl_hpam_rdma_init(void)
{
    char job[128];
    snprintf(job, sizeof job, "%s-dep", C->job); /* its own segments beside the AM card's */
    hpam_dep_config_t cfg = C->params.dep;
    cfg.job = job;
    cfg.nprocs = C->nlocal;
    cfg.my_proc = C->my_local_rank;
    if (HPAM_OK != hpam_dep_create(&cfg, &C->dep)) {
        opal_output(0, "btl/hpam: cannot start the deposit layer: %s", hpam_dep_last_error());
        return OPAL_ERROR;
    }
    if (OPAL_SUCCESS != handles_init(cfg.max_registrations)) {
        hpam_dep_destroy(C->dep);
        C->dep = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (HPAM_OK != hpam_rdma_ops_init(&C->rdma_ops, C->dep, MCA_BTL_HPAM_MAX_RDMA_OPS,
                                      sizeof(mca_btl_hpam_rdma_op_t))) {
        handles_fini();
        hpam_dep_destroy(C->dep);
        C->dep = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    (void)hpam_dep_quiet_bind(C->dep, &C->dep_quiet);
    return OPAL_SUCCESS;
}

int mca_btl_hpam_rdma_connect(int lrank)
{
    if (HPAM_OK == hpam_dep_attach(C->dep, lrank)) return OPAL_SUCCESS;
    opal_output(0, "btl/hpam: cannot attach the deposit card of local rank %d: %s", lrank,
                hpam_dep_last_error());
    return OPAL_ERR_UNREACH;
}

static void op_finish(hpam_rdma_op_t *head, int state, void *ctx);

/* Completes what is in flight (bounded by the give-up time: a dead peer
 * must not hang finalize), then closes the deposit card. */
void mca_btl_hpam_rdma_fini(void)
{
    const unsigned left =
        hpam_rdma_ops_settle(&C->rdma_ops, C->params.am.give_up_ns, op_finish, NULL);
    if (left > 0) {
        opal_output(0, "btl/hpam: finalize: %u put/get/atomic operation(s) never completed", left);
    }
    hpam_rdma_ops_fini(&C->rdma_ops);
    handles_fini();
    hpam_dep_destroy(C->dep);
    C->dep = NULL;
}

/* Says why (the first time, and every 1,000th after): Open MPI's own error
 * (MPI_ERR_WIN from MPI_Win_create) does not. */
static void registration_refused(void *base, size_t size, int rc)
{
    static unsigned long refusals;
    if (0 != refusals++ % 1000) return;
    if (HPAM_ERR_NO_RESOURCE == rc) {
        opal_output(0,
                    "btl/hpam: cannot register %zu bytes at %p for RMA: all %u registration "
                    "slots are in use (each MPI window takes one, two on a node's first "
                    "rank); raise btl_hpam_max_registrations or free windows (%lu refused so far)",
                    size, base, (unsigned)C->params.dep.max_registrations, refusals);
    } else {
        opal_output(0, "btl/hpam: cannot register %zu bytes at %p for RMA: %s (%lu refused so far)",
                    size, base, hpam_strerror(rc), refusals);
    }
}

struct mca_btl_base_registration_handle_t *
mca_btl_hpam_register_mem(struct mca_btl_base_module_t *btl,
                          struct mca_btl_base_endpoint_t *endpoint, void *base, size_t size,
                          uint32_t flags)
{
    MCA_BTL_HPAM_LOCK();
    /* As many handles as slots: none left means no slot either. */
    int rc = HPAM_ERR_NO_RESOURCE;
    mca_btl_base_registration_handle_t *h = NULL;
    if (0 != free_handle_count) {
        h = free_handles[--free_handle_count];
        rc = hpam_dep_register(C->dep, base, size, &h->ticket);
        if (HPAM_OK == rc) {
            h->base = (uint64_t)(uintptr_t)base;
            C->registrations++;
        } else {
            free_handles[free_handle_count++] = h;
            h = NULL;
        }
    }
    MCA_BTL_HPAM_UNLOCK();
    if (HPAM_OK != rc) registration_refused(base, size, rc);
    return h;
}

int mca_btl_hpam_deregister_mem(struct mca_btl_base_module_t *btl,
                                struct mca_btl_base_registration_handle_t *handle)
{
    MCA_BTL_HPAM_LOCK();
    const int rc = hpam_dep_deregister(C->dep, &handle->ticket);
    C->registrations--;
    /* back on the stack if it is this pool's (not one kept past a finalize) */
    if (handle >= handle_pool && handle < handle_pool + handle_pool_size)
        free_handles[free_handle_count++] = handle;
    MCA_BTL_HPAM_UNLOCK();
    return mca_btl_hpam_to_opal_error(rc);
}

static mca_btl_hpam_rdma_op_t *op_new(struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                      mca_btl_base_registration_handle_t *local_handle,
                                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                      void *cbdata)
{
    mca_btl_hpam_rdma_op_t *op =
        (mca_btl_hpam_rdma_op_t *)hpam_rdma_op_take(&C->rdma_ops, endpoint);
    if (NULL == op) return NULL;
    op->cbfunc = cbfunc;
    op->cbcontext = cbcontext;
    op->cbdata = cbdata;
    op->local_address = local_address;
    op->local_handle = local_handle;
    op->fetched = 0;
    op->fetch_width = 0;
    return op;
}

/* The operation is done (state > 0) or failed: the fetched value to its
 * place, the record back (before the callback: it may start another
 * operation), then Open MPI's completion. */
static void op_finish(hpam_rdma_op_t *head, int state, void *ctx)
{
    mca_btl_hpam_rdma_op_t done = *(mca_btl_hpam_rdma_op_t *)head;
    const int status = state > 0 ? OPAL_SUCCESS : mca_btl_hpam_to_opal_error(state);
    if (OPAL_SUCCESS == status && done.fetch_width)
        memcpy(done.local_address, &done.fetched, done.fetch_width);
    hpam_rdma_op_give(&C->rdma_ops, head);
    if (NULL != done.cbfunc) {
        done.cbfunc(&mca_btl_hpam_module.super, done.head.owner, done.local_address,
                    done.local_handle, done.cbcontext, done.cbdata, status);
    }
}

/* After issuing: complete now if the deposit is already done, else track it. */
static int op_started(mca_btl_hpam_rdma_op_t *op, int rc)
{
    if (HPAM_OK != rc) {
        hpam_rdma_op_give(&C->rdma_ops, &op->head);
        return mca_btl_hpam_to_opal_error(rc);
    }
    const int state = hpam_rdma_op_track(&C->rdma_ops, &op->head);
    if (0 != state) op_finish(&op->head, state, NULL);
    return OPAL_SUCCESS;
}

/* Serves peers' deposits into my registered memory (fallback packets,
 * atomics on private memory) and completes my operations. With nothing
 * registered and nothing in flight there is nothing to serve, and the
 * progress loop stays short; the component's progress also skips this call
 * while the deposit card is quiet (hpam_dep_quiet) and nothing is in
 * flight. */
int mca_btl_hpam_rdma_progress(void)
{
    if (NULL == C->dep || (0 == C->registrations && 0 == hpam_rdma_ops_inflight(&C->rdma_ops))) {
        return 0;
    }
    hpam_dep_progress(C->dep);
    if (0 == hpam_rdma_ops_inflight(&C->rdma_ops)) return 0;
    return (int)hpam_rdma_ops_progress(&C->rdma_ops, op_finish, NULL);
}

/* osc/rdma hands a NULL remote handle for this process's own memory (we
 * advertise ATOMIC_SUPPORTS_GLOB): the operation is done here with CPU
 * atomics, coherent with the deposits peers make into the same memory. */
static uint64_t local_atomic(enum hpam_dep_atomic_op op, int width, uint64_t address,
                             uint64_t operand, uint64_t compare)
{
    if (4 == width) {
        uint32_t *p = (uint32_t *)(uintptr_t)address, v = (uint32_t)operand, c = (uint32_t)compare;
        switch (op) {
        case HPAM_DEP_ADD: return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
        case HPAM_DEP_AND: return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
        case HPAM_DEP_OR: return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
        case HPAM_DEP_XOR: return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
        case HPAM_DEP_SWAP: return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
        case HPAM_DEP_CSWAP:
            __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return c;
        }
    }
    uint64_t *p = (uint64_t *)(uintptr_t)address, c = compare;
    switch (op) {
    case HPAM_DEP_ADD: return __atomic_fetch_add(p, operand, __ATOMIC_SEQ_CST);
    case HPAM_DEP_AND: return __atomic_fetch_and(p, operand, __ATOMIC_SEQ_CST);
    case HPAM_DEP_OR: return __atomic_fetch_or(p, operand, __ATOMIC_SEQ_CST);
    case HPAM_DEP_XOR: return __atomic_fetch_xor(p, operand, __ATOMIC_SEQ_CST);
    case HPAM_DEP_SWAP: return __atomic_exchange_n(p, operand, __ATOMIC_SEQ_CST);
    case HPAM_DEP_CSWAP:
        __atomic_compare_exchange_n(p, &c, operand, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return c;
    }
    return 0;
}

static int local_done(struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                      mca_btl_base_registration_handle_t *local_handle,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    if (NULL != cbfunc) {
        cbfunc(&mca_btl_hpam_module.super, endpoint, local_address, local_handle, cbcontext, cbdata,
               OPAL_SUCCESS);
    }
    return OPAL_SUCCESS;
}

static inline uint64_t offset_of(const mca_btl_base_registration_handle_t *h, uint64_t address)
{
    return address - h->base; /* out of range wraps high: the deposit layer rejects it */
}

/* put (is_put) or get of size bytes between local_address and the peer's
 * registered memory; this process's own memory (NULL handle) is copied here. */
static int transfer(bool is_put, struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    if (NULL == remote_handle) {
        void *remote = (void *)(uintptr_t)remote_address;
        memcpy(is_put ? remote : local_address, is_put ? local_address : remote, size);
        return local_done(endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
    }
    MCA_BTL_HPAM_LOCK();
    if (0 == hpam_rdma_ops_free(&C->rdma_ops)) { /* no record for it if it stays in flight */
        MCA_BTL_HPAM_UNLOCK();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    const uint64_t offset = offset_of(remote_handle, remote_address);
    hpam_dep_handle_t h;
    const int rc =
        is_put ? hpam_dep_put(C->dep, local_address, size, &remote_handle->ticket, offset, &h)
               : hpam_dep_get(C->dep, local_address, size, &remote_handle->ticket, offset, &h);
    if (HPAM_OK == rc && !hpam_dep_completed(h)) { /* in flight: a record, progress finishes it */
        mca_btl_hpam_rdma_op_t *op =
            op_new(endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
        op->head.handle = h;
        (void)op_started(op, HPAM_OK);
    }
    MCA_BTL_HPAM_UNLOCK();
    if (HPAM_OK != rc) return mca_btl_hpam_to_opal_error(rc);
    if (!hpam_dep_completed(h)) return OPAL_SUCCESS;
    /* Carried out within the call (a lone deposit, or one too large for a
     * batch): complete now, with no record in the table. */
    return local_done(endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
}

int mca_btl_hpam_put(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                     int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata)
{
    return transfer(true, endpoint, local_address, remote_address, local_handle, remote_handle,
                    size, cbfunc, cbcontext, cbdata);
}

int mca_btl_hpam_get(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                     int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata)
{
    return transfer(false, endpoint, local_address, remote_address, local_handle, remote_handle,
                    size, cbfunc, cbcontext, cbdata);
}

static bool map_op(mca_btl_base_atomic_op_t op, enum hpam_dep_atomic_op *out)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD: *out = HPAM_DEP_ADD; return true;
    case MCA_BTL_ATOMIC_AND: *out = HPAM_DEP_AND; return true;
    case MCA_BTL_ATOMIC_OR: *out = HPAM_DEP_OR; return true;
    case MCA_BTL_ATOMIC_XOR: *out = HPAM_DEP_XOR; return true;
    case MCA_BTL_ATOMIC_SWAP: *out = HPAM_DEP_SWAP; return true;
    default: return false;
    }
}

static int atomic_common(struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                         uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
                         mca_btl_base_registration_handle_t *remote_handle,
                         enum hpam_dep_atomic_op op, uint64_t operand, uint64_t compare, int flags,
                         bool fetch, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                         void *cbdata)
{
    const int width = (flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? 4 : 8;
    if (flags & MCA_BTL_ATOMIC_FLAG_FLOAT) return OPAL_ERR_NOT_SUPPORTED;
    if (NULL == remote_handle) {
        const uint64_t old = local_atomic(op, width, remote_address, operand, compare);
        if (fetch) memcpy(local_address, &old, width);
        return local_done(endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
    }
    MCA_BTL_HPAM_LOCK();
    mca_btl_hpam_rdma_op_t *o =
        op_new(endpoint, local_address, local_handle, cbfunc, cbcontext, cbdata);
    int rc = OPAL_ERR_OUT_OF_RESOURCE;
    if (NULL != o) {
        o->fetch_width = fetch ? width : 0;
        rc = op_started(o, hpam_dep_atomic(C->dep, op, width, &remote_handle->ticket,
                                           offset_of(remote_handle, remote_address), operand,
                                           compare, fetch ? &o->fetched : NULL, &o->head.handle));
    }
    MCA_BTL_HPAM_UNLOCK();
    return rc;
}

int mca_btl_hpam_atomic_op(struct mca_btl_base_module_t *btl,
                           struct mca_btl_base_endpoint_t *endpoint, uint64_t remote_address,
                           struct mca_btl_base_registration_handle_t *remote_handle,
                           mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    enum hpam_dep_atomic_op dop;
    if (!map_op(op, &dop)) return OPAL_ERR_NOT_SUPPORTED;
    return atomic_common(endpoint, NULL, remote_address, NULL, remote_handle, dop, operand, 0,
                         flags, false, cbfunc, cbcontext, cbdata);
}

int mca_btl_hpam_atomic_fop(struct mca_btl_base_module_t *btl,
                            struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                            uint64_t remote_address,
                            struct mca_btl_base_registration_handle_t *local_handle,
                            struct mca_btl_base_registration_handle_t *remote_handle,
                            mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                            mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    enum hpam_dep_atomic_op dop;
    if (!map_op(op, &dop)) return OPAL_ERR_NOT_SUPPORTED;
    return atomic_common(endpoint, local_address, remote_address, local_handle, remote_handle, dop,
                         operand, 0, flags, true, cbfunc, cbcontext, cbdata);
}

int mca_btl_hpam_atomic_cswap(struct mca_btl_base_module_t *btl,
                              struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                              uint64_t remote_address,
                              struct mca_btl_base_registration_handle_t *local_handle,
                              struct mca_btl_base_registration_handle_t *remote_handle,
                              uint64_t compare, uint64_t value, int flags, int order,
                              mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                              void *cbdata)
{
    return atomic_common(endpoint, local_address, remote_address, local_handle, remote_handle,
                         HPAM_DEP_CSWAP, value, compare, flags, true, cbfunc, cbcontext, cbdata);
}

/* Waits until every operation to endpoint (all, if NULL) has completed.
 * The deposit layer runs first, always (a flush point: it ends the runs of
 * puts and gets that tell a lone deposit, deposit.hpp): the send terminus
 * carries out the queued batch and the puts in it complete there, without
 * a pass through opal_progress (the AM card's poll, every other
 * component's progress). opal_progress only while something still waits
 * for a peer (a get or an atomic its owner serves), so that nothing else
 * starves meanwhile. */
int mca_btl_hpam_flush(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint)
{
    if (NULL == C->dep) return OPAL_SUCCESS; /* no deposit layer: no operation either */
    for (;;) {
        MCA_BTL_HPAM_LOCK();
        hpam_dep_progress(C->dep);
        bool busy = false;
        if (0 != hpam_rdma_ops_inflight(&C->rdma_ops)) { /* none: the puts completed at once */
            (void)hpam_rdma_ops_progress(&C->rdma_ops, op_finish, NULL);
            busy = hpam_rdma_ops_busy(&C->rdma_ops, endpoint, UINT64_MAX);
        }
        MCA_BTL_HPAM_UNLOCK();
        if (!busy) return OPAL_SUCCESS;
        opal_progress();
    }
}
