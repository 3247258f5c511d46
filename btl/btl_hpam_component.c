/*
 * The btl/hpam component: its table (kept in this small C file, with
 * designated initializers), parameter registration, init (one endpoint per
 * process over the processes of the job on this node) and progress.
 *
 * hpam takes part only in jobs that name it in the btl list
 * (`--mca btl hpam,self`), and its exclusivity is below vader's, so
 * installing it never changes a job that did not ask for it.
 */
#include "btl_hpam.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int hpam_register(void);
static int hpam_open(void);
static int hpam_close(void);
static mca_btl_base_module_t **hpam_init(int *num_btls, bool progress_threads, bool mpi_threads);
static int hpam_progress(void);

mca_btl_hpam_component_t mca_btl_hpam_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_DEFAULT_VERSION("hpam"),
                    .mca_open_component = hpam_open,
                    .mca_close_component = hpam_close,
                    .mca_register_component_params = hpam_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .btl_init = hpam_init,
            .btl_progress = hpam_progress,
        },
};

static int hpam_register(void)
{
    mca_btl_base_module_t *m = &mca_btl_hpam_module.super;
    int rc = mca_btl_hpam_params_register();
    if (OPAL_SUCCESS != rc) return rc;
    /* Defaults Open MPI's own btl_hpam_* knobs start from. */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT; /* below vader, above tcp */
    /* The payload of the BTL's default block; hpam_init sets those the
     * user left alone to the payload of the block in use
     * (mca_btl_hpam_params_fit_sizes). */
    const size_t payload = MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE - HPAM_PACKET_HEADER_BYTES;
    m->btl_eager_limit = payload;
    m->btl_rndv_eager_limit = payload;
    m->btl_max_send_size = payload;
    m->btl_rdma_pipeline_send_length = payload;
    m->btl_rdma_pipeline_frag_size = payload;
    m->btl_min_rdma_pipeline_size = 0;
    m->btl_latency = 1;
    m->btl_bandwidth = 10000;
    m->btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS |
                   MCA_BTL_FLAGS_ATOMIC_FOPS | MCA_BTL_FLAGS_RDMA_FLUSH;
    m->btl_atomic_flags = mca_btl_hpam_atomic_flags;
    m->btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t);
    m->btl_get_limit = m->btl_put_limit = (size_t)1 << 30;
    m->btl_get_alignment = m->btl_put_alignment = 0;
    /* Local memory never needs registering: deposits read and write any address. */
    m->btl_get_local_registration_threshold = SIZE_MAX;
    m->btl_put_local_registration_threshold = SIZE_MAX;
    rc = mca_btl_base_param_register(&mca_btl_hpam_component.super.btl_version, m);
    if (OPAL_SUCCESS != rc) return rc;
    return mca_btl_hpam_mpit_register();
}

/* MPI_T_init and MPI_Init may each open and close the component: construct
 * and destruct once. */
static bool constructed = false;

static int hpam_open(void)
{
    if (constructed) return OPAL_SUCCESS;
    constructed = true;
    mca_btl_hpam_component.free_frags = NULL;
    mca_btl_hpam_component.frag_chunks = NULL;
    mca_btl_hpam_component.nchunks = 0;
    mca_btl_hpam_component.nfrags = 0;
    mca_btl_hpam_component.pack_buffer = NULL;
    hpam_pending_init(&mca_btl_hpam_component.pending);
    OBJ_CONSTRUCT(&mca_btl_hpam_component.lock, opal_recursive_mutex_t);
    mca_btl_hpam_component.ep = NULL;
    mca_btl_hpam_component.peers = NULL;
    mca_btl_hpam_component.polls = 1;
    return OPAL_SUCCESS;
}

static int hpam_close(void)
{
    if (!constructed) return OPAL_SUCCESS;
    constructed = false;
    mca_btl_hpam_frags_release();
    OBJ_DESTRUCT(&mca_btl_hpam_component.lock);
    return OPAL_SUCCESS;
}

/* True when the user's btl list names hpam (and is not an exclusion list). */
static bool hpam_requested(void)
{
    const char **value = NULL;
    int idx = mca_base_var_find("opal", "btl", NULL, NULL);
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) ||
        NULL == value || NULL == *value || '^' == (*value)[0]) {
        return false;
    }
    char *list = strdup(*value), *save = NULL;
    bool found = false;
    for (char *t = strtok_r(list, ",", &save); t && !found; t = strtok_r(NULL, ",", &save)) {
        found = 0 == strcmp(t, "hpam");
    }
    free(list);
    return found;
}

/* The job asked for hpam with a bad parameter (each rank has printed which
 * and its valid range): end the whole job through the runtime rather than
 * run on without hpam (tcp would quietly take over) or fail later. */
static void __attribute__((noreturn)) end_job_for_bad_parameters(void)
{
    static const char why[] = "btl/hpam: invalid MCA parameters (see above); "
                              "`ompi_info --param btl hpam --level 9` lists them";
    opal_output(0, "%s", why);
    if (NULL != opal_pmix.abort) (void)opal_pmix.abort(1, why, NULL);
    _exit(1); /* the runtime did not end us: still never run on */
}

/* The job id every process of the job on this node derives alike. */
static void make_job_id(char *out, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a of the job's session directory */
    for (const char *s = opal_process_info.job_session_dir; s && *s; ++s) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    snprintf(out, len, "ompi%x-%08x", (unsigned)OPAL_PROC_MY_NAME.jobid, h);
}

/* The job's protection key (HPAM 5.3): random, drawn by one process of the
 * job on this node (the lowest rank here) and handed to the others through
 * the modex, so it is never derived from anything visible. Its modex data
 * reaches the others when it commits after its BTLs' init; a get made
 * before that may find only what it committed earlier, so the others ask
 * again until the key is there (up to btl_hpam_attach_timeout_ms). 0: none
 * could be had. */
#define HPAM_KEY_NAME "btl.hpam.job_key"
static uint64_t make_or_receive_job_key(void)
{
    opal_process_name_t any = {.jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD};
    char *peers = NULL;
    int rc;
    OPAL_MODEX_RECV_VALUE(rc, OPAL_PMIX_LOCAL_PEERS, &any, &peers, OPAL_STRING);
    if (OPAL_SUCCESS != rc || NULL == peers) return 0;
    opal_process_name_t maker = {.jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_INVALID};
    for (char *at = peers, *end; *at; at = *end ? end + 1 : end) {
        const unsigned long v = strtoul(at, &end, 10);
        if (end == at) break;
        if (v < maker.vpid) maker.vpid = (opal_vpid_t)v;
    }
    free(peers);
    uint64_t key = 0, *ptr = &key;
    if (maker.vpid == OPAL_PROC_MY_NAME.vpid) {
        while (0 == key) {
            if ((ssize_t)sizeof key != getrandom(&key, sizeof key, 0) && EINTR != errno) return 0;
        }
        OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_LOCAL, HPAM_KEY_NAME, &key, OPAL_UINT64);
        return OPAL_SUCCESS == rc ? key : 0;
    }
    const uint64_t patience_ms = mca_btl_hpam_component.params.am.attach_timeout_ms;
    for (uint64_t waited_ms = 0; waited_ms <= patience_ms; ++waited_ms) {
        OPAL_MODEX_RECV_VALUE(rc, HPAM_KEY_NAME, &maker, &ptr, OPAL_UINT64);
        if (OPAL_SUCCESS == rc && 0 != key) return key;
        usleep(1000);
    }
    return 0;
}

/* Setup failed once the endpoint existed: undo what was made; hpam stays out. */
static mca_btl_base_module_t **abandon_init(void)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (NULL != c->dep) mca_btl_hpam_rdma_fini();
    if (NULL != c->ep) (void)hpam_ep_destroy(c->ep);
    c->ep = NULL;
    mca_btl_hpam_order_fini();
    free(c->peers);
    c->peers = NULL;
    return NULL;
}

static mca_btl_base_module_t **hpam_init(int *num_btls, bool progress_threads, bool mpi_threads)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    mca_btl_base_module_t *m = &mca_btl_hpam_module.super;
    *num_btls = 0;
    if (!hpam_requested()) return NULL;
    if (OPAL_SUCCESS != mca_btl_hpam_params_check()) end_job_for_bad_parameters();
    if (0 == opal_process_info.num_local_peers) return NULL; /* nobody on this node to talk to */
    c->nlocal = opal_process_info.num_local_peers + 1;
    c->my_local_rank = opal_process_info.my_local_rank;
    mca_btl_hpam_params_fit_depth(c->nlocal);
    make_job_id(c->job, sizeof c->job);

    hpam_config_t cfg = c->params.am;
    cfg.key = make_or_receive_job_key();
    if (0 == cfg.key) {
        opal_output(0, "btl/hpam: cannot start on %s: no job key from the modex",
                    opal_process_info.nodename);
        return NULL;
    }
    cfg.job = c->job;
    cfg.nprocs = c->nlocal;
    cfg.my_proc = c->my_local_rank;
    if (HPAM_OK != hpam_ep_create(&cfg, &c->ep)) {
        opal_output(0, "btl/hpam: cannot start on %s: %s", opal_process_info.nodename,
                    hpam_last_error());
        return NULL;
    }
    (void)hpam_send_now_bind(c->ep, &c->send_now);
    (void)hpam_poll_now_bind(c->ep, &c->poll_now);
    if (OPAL_SUCCESS !=
        mca_btl_hpam_order_init(c->nlocal, (int)c->params.am.depth, hpam_max_bulk(c->ep))) {
        return abandon_init();
    }
    (void)hpam_register_handler_bulk(c->ep, MCA_BTL_HPAM_HANDLER, mca_btl_hpam_on_message, NULL);
    if (OPAL_SUCCESS != mca_btl_hpam_rdma_init()) return abandon_init();

    const size_t max_bulk = hpam_max_bulk(c->ep);
    if (OPAL_SUCCESS != mca_btl_hpam_params_fit_sizes(m, max_bulk)) end_job_for_bad_parameters();
    if (c->params.verbose > 0) {
        opal_output(0,
                    "btl/hpam: local rank %d of %d: nic %s, depth %u, block %u bytes, "
                    "eager limit %zu, max send size %zu",
                    c->my_local_rank, c->nlocal, c->params.am.nic, (unsigned)c->params.am.depth,
                    (unsigned)c->params.am.block_size, m->btl_eager_limit, m->btl_max_send_size);
    }
    if (OPAL_SUCCESS != mca_btl_hpam_frags_setup(m->btl_max_send_size)) return abandon_init();
    c->peers = calloc((size_t)c->nlocal, sizeof(*c->peers));
    mca_btl_base_module_t **modules = malloc(sizeof(*modules));
    if (NULL == c->peers || NULL == modules) {
        free(modules);
        return abandon_init();
    }
    modules[0] = m;
    *num_btls = 1;
    return modules;
}

/* Serves the network, then sends what handlers queued. */
static inline int progress_unlocked(mca_btl_hpam_component_t *c)
{
    int n = mca_btl_hpam_poll();
    if (OPAL_UNLIKELY(n < 0)) {
        if (HPAM_ERR_UNREACHABLE == n) mca_btl_hpam_report_lost_peer();
        n = 0;
    }
    if (NULL != c->pending.first) n += mca_btl_hpam_drain_pending();
    /* With a window registered and nothing in flight, the deposit card is
     * served only when it has something to do: an idle call makes no call.
     * (One test of both counts first: without a window, the call's only.) */
    const unsigned inflight = hpam_rdma_ops_inflight(&c->rdma_ops);
    if (0 != ((unsigned)c->registrations | inflight) &&
        (0 != inflight || !hpam_dep_quiet(&c->dep_quiet))) {
        n += mca_btl_hpam_rdma_progress();
    }
    return n;
}

static int __attribute__((noinline)) progress_locked(mca_btl_hpam_component_t *c)
{
    opal_mutex_lock(&c->lock);
    const int n = progress_unlocked(c);
    opal_mutex_unlock(&c->lock);
    return n;
}

/* Without threads (the usual case) no lock is taken: the test for them is
 * made once, and the unlocked body is this function's own. */
static int hpam_progress(void)
{
    mca_btl_hpam_component_t *c = &mca_btl_hpam_component;
    if (OPAL_UNLIKELY(NULL == c->ep)) return 0;
    if (OPAL_UNLIKELY(opal_using_threads())) return progress_locked(c);
    return progress_unlocked(c);
}
