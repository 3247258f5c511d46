/*
 * Opening and closing an hpam interface: join the job's registry, make the
 * active-message card and endpoint and the initiator deposit card, size the
 * per-peer state; at close, finish what is in flight (bounded by the
 * give-up time) and let HPAM drain the network before the cards go.
 */

#include "uct_hpam.h"

static void release(uct_hpam_iface_t *iface);

static ucs_status_t check_open_params(uct_hpam_md_t *md, uct_worker_h worker,
                                      const uct_iface_params_t *params)
{
    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("hpam: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    if (0 != strcmp(params->mode.device.dev_name, md->params.am.nic)) {
        ucs_error("hpam: no device '%s': the card is '%s' (UCX_HPAM_NIC)",
                  params->mode.device.dev_name, md->params.am.nic);
        return UCS_ERR_NO_DEVICE;
    }
    /* Messages reach the handler in place, never in a descriptor of ours, so
     * an alignment has nothing to align; it must still be a valid request. */
    const size_t align = UCT_IFACE_PARAM_VALUE(params, am_alignment, AM_ALIGNMENT, 1);
    const size_t align_offset = UCT_IFACE_PARAM_VALUE(params, am_align_offset, AM_ALIGN_OFFSET, 0);
    if (((params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) &&
         !(params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT)) ||
        !ucs_is_pow2(align) || align_offset >= align) {
        ucs_error("hpam: invalid active-message alignment %zu (offset %zu): a power of 2 and an "
                  "offset below it, set together",
                  align, align_offset);
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_derived_of(worker, uct_priv_worker_t)->thread_mode == UCS_THREAD_MODE_MULTI) {
        ucs_error("hpam: a multi-threaded worker is not supported");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* The cards: my index from the registry, the AM endpoint, the deposit card. */
static ucs_status_t make_cards(uct_hpam_iface_t *iface)
{
    uct_hpam_md_t *md = iface->md;
    uct_hpam_md_lock(md);
    ucs_status_t status = uct_hpam_md_dep_ready(md); /* its index goes in my address */
    uct_hpam_md_unlock(md);
    if (status != UCS_OK) return status;
    char err[512], dep_job[80];
    uint64_t key;
    if (uct_hpam_registry_join(md->params.job, &md->params.shape, &iface->proc, &key, err,
                               sizeof err)) {
        ucs_error("hpam: %s", err);
        iface->proc = -1;
        return UCS_ERR_NO_RESOURCE;
    }
    hpam_config_t cfg = md->params.am;
    cfg.job = md->params.job;
    cfg.my_proc = iface->proc;
    cfg.key = key;
    if (HPAM_OK != hpam_ep_create(&cfg, &iface->am)) {
        ucs_error("hpam: cannot create the card of process %d of job %s: %s", iface->proc,
                  md->params.job, hpam_last_error());
        iface->am = NULL;
        return UCS_ERR_NO_RESOURCE;
    }
    uct_hpam_dep_job(md->params.job, dep_job, sizeof dep_job);
    hpam_dep_config_t dcfg = md->params.dep;
    dcfg.job = dep_job;
    dcfg.my_proc = iface->proc;
    if (HPAM_OK != hpam_dep_create(&dcfg, &iface->dep)) {
        ucs_error("hpam: cannot create the deposit card of process %d of job %s: %s", iface->proc,
                  md->params.job, hpam_dep_last_error());
        iface->dep = NULL;
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

/* Per-peer state and the ordered streams of active messages (hpam_order:
 * [peer][window] slots that restore the order of early arrivals). */
static ucs_status_t make_peer_state(uct_hpam_iface_t *iface)
{
    iface->nprocs = (int)iface->md->params.shape.max_procs;
    iface->window = iface->md->params.shape.depth;
    iface->max_bulk = hpam_max_bulk(iface->am);
    (void)hpam_send_now_bind(iface->am, &iface->send_now);
    (void)hpam_poll_now_bind(iface->am, &iface->poll_now);
    iface->peers = ucs_calloc(iface->nprocs, sizeof(*iface->peers), "hpam peers");
    if (iface->peers == NULL) return UCS_ERR_NO_MEMORY;
    const int rc =
        hpam_order_init(&iface->order, iface->nprocs, (int)iface->window, iface->max_bulk);
    return rc == HPAM_OK ? UCS_OK : uct_hpam_status(rc);
}

static UCS_CLASS_INIT_FUNC(uct_hpam_iface_t, uct_md_h tl_md, uct_worker_h worker,
                           const uct_iface_params_t *params, const uct_iface_config_t *tl_config)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    ucs_status_t status = check_open_params(md, worker, params);
    if (status != UCS_OK) return status;
    UCS_CLASS_CALL_SUPER_INIT(
        uct_base_iface_t, &uct_hpam_iface_ops, &uct_base_iface_internal_ops, tl_md, worker, params,
        tl_config UCS_STATS_ARG(
            (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ? params->stats_root : NULL)
            UCS_STATS_ARG(UCT_HPAM_NAME));
    /* Everything past the base class starts zero (NULL, empty, no counts). */
    memset(UCS_PTR_BYTE_OFFSET(self, sizeof(self->super)), 0, sizeof(*self) - sizeof(self->super));
    self->md = md;
    self->proc = -1;
    ucs_list_head_init(&self->eps);
    hpam_pending_init(&self->pending);
    status = make_cards(self);
    if (status == UCS_OK) status = make_peer_state(self);
    if (status == UCS_OK) status = uct_hpam_rma_init(self);
    if (status == UCS_OK) status = uct_hpam_am_init(self);
    if (status != UCS_OK) {
        release(self); /* the class machinery cleans up only the base class */
        return status;
    }
    uct_hpam_iface_join_process(self);
    ucs_debug("hpam: interface %p is process %d of job %s (%s card, D=%u, %zu-byte messages)", self,
              self->proc, md->params.job, md->params.am.nic, self->window, self->max_bulk);
    return UCS_OK;
}

static void print_stats(uct_hpam_iface_t *iface)
{
    hpam_counters_t c;
    if (HPAM_OK != hpam_get_counters(iface->am, &c)) return;
    ucs_info("hpam: process %d of job %s: requests %lu sent %lu received, replies %lu/%lu, "
             "acks %lu, busy %lu, timeouts %lu, retransmissions %lu, duplicates reflected %lu, "
             "crc failures %lu, key rejections %lu, malformed %lu, overflow drops %lu, wire: "
             "dropped %lu duplicated %lu corrupted %lu reordered %lu delayed %lu; UCX active "
             "messages held for order %lu, rejected %lu; sends answered no-resource %lu; timeout "
             "walks by another interface %lu",
             iface->proc, iface->md->params.job, c.requests_sent, c.requests_received,
             c.replies_sent, c.replies_received, c.acks_sent, c.busy_returns, c.timeouts,
             c.retransmissions, c.duplicates_reflected, c.crc_failures, c.key_rejections,
             c.malformed, c.overflow_drops, c.wire_dropped, c.wire_duplicated, c.wire_corrupted,
             c.wire_reordered, c.wire_delayed, iface->am_stashed, iface->am_rejected,
             iface->no_resource, iface->helped);
}

static void release(uct_hpam_iface_t *iface)
{
    if (iface->process_link.next != NULL) uct_hpam_iface_leave_process(iface); /* no more help */
    iface->closing = 1; /* arrivals from now on are answered, not handed to UCX */
    if (iface->am != NULL && iface->md->params.stats) print_stats(iface);
    uct_hpam_rma_close(iface);
    if (iface->am != NULL && HPAM_OK != hpam_ep_destroy(iface->am)) {
        ucs_debug("hpam: close of process %d: %s", iface->proc, hpam_last_error());
    }
    iface->am = NULL;
    if (iface->dep != NULL) hpam_dep_destroy(iface->dep);
    iface->dep = NULL;
    if (iface->proc >= 0) uct_hpam_registry_leave(iface->md->params.job, iface->proc);
    iface->proc = -1;
    ucs_free(iface->peers);
    hpam_order_fini(&iface->order);
    ucs_free(iface->bounce);
    ucs_free(iface->am_scratch);
    iface->am_scratch = NULL;
    iface->peers = NULL;
    iface->bounce = NULL;
}

static UCS_CLASS_CLEANUP_FUNC(uct_hpam_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("hpam: interface closed with endpoints still open");
    }
    release(self);
}

UCS_CLASS_DEFINE(uct_hpam_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_hpam_iface_t, uct_iface_t, uct_md_h, uct_worker_h,
                                 const uct_iface_params_t *, const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_hpam_iface_t, uct_iface_t);

ucs_status_t uct_hpam_iface_open(uct_md_h md, uct_worker_h worker, const uct_iface_params_t *params,
                                 const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    return UCS_CLASS_NEW_FUNC_NAME(uct_hpam_iface_t)(md, worker, params, config, iface_p);
}

void uct_hpam_iface_close(uct_iface_h tl_iface)
{
    UCS_CLASS_DELETE_FUNC_NAME(uct_hpam_iface_t)(tl_iface);
}
