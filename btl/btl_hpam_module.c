/*
 * The btl/hpam module: its function table, processes (add_procs one peer at
 * a time is fine: each local peer's card is attached once, on first sight),
 * finalize (fragments: btl_hpam_frag.c; errors: btl_hpam_error.c).
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"

static void endpoint_construct(mca_btl_base_endpoint_t *ep)
{
    hpam_pending_queue_init(&ep->pending);
    ep->proc = NULL;
    ep->peer = -1;
    ep->refused_at = 0; /* polls start at 1 */
}
OBJ_CLASS_INSTANCE(mca_btl_base_endpoint_t, opal_list_item_t, endpoint_construct, NULL);

/* The peer's process index on the AM layer: its local rank on this node. */
static int local_rank_of(opal_proc_t *proc)
{
    uint16_t lrank = 0, *ptr = &lrank;
    int rc;
    OPAL_MODEX_RECV_VALUE(rc, OPAL_PMIX_LOCAL_RANK, &proc->proc_name, &ptr, OPAL_UINT16);
    return OPAL_SUCCESS == rc ? (int)lrank : -1;
}

static mca_btl_base_endpoint_t *connect_peer(opal_proc_t *proc, int lrank)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (NULL != c->peers[lrank]) return c->peers[lrank];
    int rc = hpam_connect(c->ep, lrank);
    if (HPAM_OK != rc) {
        opal_output(0, "btl/hpam: cannot reach local rank %d (%s) on %s: %s", lrank,
                    OPAL_NAME_PRINT(proc->proc_name), opal_process_info.nodename,
                    hpam_last_error());
        return NULL;
    }
    if (OPAL_SUCCESS != mca_btl_hpam_rdma_connect(lrank)) return NULL;
    mca_btl_base_endpoint_t *ep = OBJ_NEW(mca_btl_base_endpoint_t);
    if (NULL == ep) return NULL;
    ep->proc = proc;
    ep->peer = lrank;
    c->peers[lrank] = ep;
    return ep;
}

static int hpam_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                          opal_bitmap_t *reachable)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    MCA_BTL_HPAM_LOCK();
    for (size_t i = 0; i < nprocs; ++i) {
        opal_proc_t *proc = procs[i];
        /* Myself goes to btl/self; other nodes to another BTL (tcp). */
        if (proc == opal_proc_local_get() || !OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) continue;
        if (proc->proc_name.jobid != OPAL_PROC_MY_NAME.jobid) continue; /* other jobs: not ours */
        const int lrank = local_rank_of(proc);
        if (lrank < 0 || lrank >= c->nlocal || lrank == c->my_local_rank) continue;
        mca_btl_base_endpoint_t *ep = connect_peer(proc, lrank);
        if (NULL == ep) continue;
        peers[i] = ep;
        if (NULL != reachable) opal_bitmap_set_bit(reachable, (int)i);
    }
    MCA_BTL_HPAM_UNLOCK();
    return OPAL_SUCCESS;
}

static int hpam_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                          struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    return OPAL_SUCCESS; /* cards stay attached until finalize drains the network */
}

static int hpam_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (NULL == c->ep) return OPAL_SUCCESS;
    MCA_BTL_HPAM_LOCK();
    while (NULL != c->pending.first) {
        (void)mca_btl_hpam_poll();
        (void)mca_btl_hpam_drain_pending();
        if (c->lost_peer_reported) break;
    }
    if (c->params.stats) mca_btl_hpam_print_stats();
    mca_btl_hpam_rdma_fini();
    int rc = hpam_ep_destroy(c->ep); /* serves the network until every peer is done */
    if (HPAM_OK != rc && c->params.verbose > 0) {
        opal_output(0, "btl/hpam: finalize: %s", hpam_last_error());
    }
    c->ep = NULL;
    mca_btl_hpam_order_fini(); /* after the last handler ran */
    for (int p = 0; p < c->nlocal; ++p) {
        if (NULL != c->peers[p]) OBJ_RELEASE(c->peers[p]);
    }
    free(c->peers);
    c->peers = NULL;
    MCA_BTL_HPAM_UNLOCK();
    return OPAL_SUCCESS;
}

static int hpam_register_error(struct mca_btl_base_module_t *btl,
                               mca_btl_base_module_error_cb_fn_t cbfunc)
{
    mca_btl_hpam_module.error_cb = cbfunc;
    return OPAL_SUCCESS;
}

static void hpam_dump(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      int verbose)
{
    mca_btl_hpam_print_stats();
}

mca_btl_hpam_module_t mca_btl_hpam_module = {
    .super =
        {
            .btl_component = &mca_btl_hpam_component.super,
            .btl_add_procs = hpam_add_procs,
            .btl_del_procs = hpam_del_procs,
            .btl_finalize = hpam_finalize,
            .btl_alloc = mca_btl_hpam_alloc,
            .btl_free = mca_btl_hpam_free,
            .btl_prepare_src = mca_btl_hpam_prepare_src,
            .btl_send = mca_btl_hpam_send,
            .btl_sendi = mca_btl_hpam_sendi,
            .btl_put = mca_btl_hpam_put,
            .btl_get = mca_btl_hpam_get,
            .btl_atomic_op = mca_btl_hpam_atomic_op,
            .btl_atomic_fop = mca_btl_hpam_atomic_fop,
            .btl_atomic_cswap = mca_btl_hpam_atomic_cswap,
            .btl_register_mem = mca_btl_hpam_register_mem,
            .btl_deregister_mem = mca_btl_hpam_deregister_mem,
            .btl_flush = mca_btl_hpam_flush,
            .btl_dump = hpam_dump,
            .btl_register_error = hpam_register_error,
        },
    .error_cb = NULL,
};
