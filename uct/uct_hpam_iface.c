/*
 * The hpam interface: one HPAM endpoint over an active-message card (Medusa
 * or Hamlyn, UCX_HPAM_NIC) plus an initiator deposit card, numbered in the
 * job's registry. Its address is (job, process index, memory domain's
 * deposit card); peers on the same node and in the same job reach it.
 * Progress serves the network (HPAM_poll), completes deposits, serves the
 * memory domain's deposit card, then sends what waited and completes the
 * flushes that waited (uct_hpam_flush.c).
 */

#include "uct_hpam.h"

#include <pthread.h>

#include <uct/sm/base/sm_iface.h>

ucs_config_field_t uct_hpam_iface_config_table[] = {{"", "", NULL,
                                                     ucs_offsetof(uct_hpam_iface_config_t, super),
                                                     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},
                                                    {NULL}};

/* The one device is the card: "medusa" or "hamlyn" (UCX_HPAM_NIC). */
ucs_status_t uct_hpam_query_devices(uct_md_h tl_md, uct_tl_device_resource_t **devices,
                                    unsigned *count)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    return uct_single_device_resource(tl_md, md->params.am.nic, UCT_DEVICE_TYPE_SHM,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, devices, count);
}

static ucs_status_t uct_hpam_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    uct_base_iface_query(&iface->super, attr);
    attr->iface_addr_len = sizeof(uct_hpam_iface_addr_t);
    attr->device_addr_len = uct_sm_iface_get_device_addr_len();
    attr->ep_addr_len = 0;
    attr->max_conn_priv = 0;
    attr->cap.flags = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PUT_SHORT |
                      UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                      UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                      UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC |
                      UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                      UCT_IFACE_FLAG_EP_CHECK;
    attr->cap.event_flags = 0;
    attr->cap.atomic32.op_flags = attr->cap.atomic64.op_flags =
        UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) | UCS_BIT(UCT_ATOMIC_OP_OR) |
        UCS_BIT(UCT_ATOMIC_OP_XOR);
    attr->cap.atomic32.fop_flags = attr->cap.atomic64.fop_flags =
        attr->cap.atomic64.op_flags | UCS_BIT(UCT_ATOMIC_OP_SWAP) | UCS_BIT(UCT_ATOMIC_OP_CSWAP);

    /* Put and get: a bounce buffer for short/bcopy, one buffer for zcopy. */
#define RMA_CAPS(_cap, _max_short)                                                                 \
    do {                                                                                           \
        (_cap).max_short = (_max_short);                                                           \
        (_cap).max_bcopy = UCT_HPAM_BOUNCE_SIZE;                                                   \
        (_cap).min_zcopy = 0;                                                                      \
        (_cap).max_zcopy = (size_t)1 << 30;                                                        \
        (_cap).opt_zcopy_align = (_cap).align_mtu = (_cap).max_iov = 1;                            \
    } while (0)
    RMA_CAPS(attr->cap.put, UCT_HPAM_BOUNCE_SIZE);
    RMA_CAPS(attr->cap.get, 0);
#undef RMA_CAPS
    /* An active message is one HPAM request; its bytes travel in the packet. */
    attr->cap.am.max_short = iface->max_bulk;
    attr->cap.am.max_bcopy = iface->max_bulk;
    attr->cap.am.min_zcopy = 0;
    attr->cap.am.max_zcopy = 0;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu = 1;
    attr->cap.am.max_hdr = 0;
    attr->cap.am.max_iov = UCT_HPAM_AM_MAX_IOV;

    /* From bench/RESULTS.md (ucx_perftest over hpam, this machine class). */
    attr->latency = ucs_linear_func_make(UCT_HPAM_LATENCY, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared = UCT_HPAM_BANDWIDTH;
    attr->overhead = UCT_HPAM_OVERHEAD;
    attr->priority = 0;
    return UCS_OK;
}

static ucs_status_t uct_hpam_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    uct_hpam_iface_addr_t a = {.job_hash = iface->md->params.job_hash,
                               .proc = (uint32_t)iface->proc,
                               .md_proc = (uint32_t)iface->md->dep_proc};
    memcpy(addr, &a, sizeof a);
    return UCS_OK;
}

/* Same node (and namespace) and same job: the registry that numbered us. */
static int uct_hpam_iface_is_reachable(const uct_iface_h tl_iface,
                                       const uct_device_addr_t *dev_addr,
                                       const uct_iface_addr_t *iface_addr)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    if (iface_addr == NULL || dev_addr == NULL) return 0;
    uct_hpam_iface_addr_t a;
    memcpy(&a, iface_addr, sizeof a);
    return uct_sm_iface_is_reachable(tl_iface, dev_addr, iface_addr) &&
           a.job_hash == iface->md->params.job_hash && a.proc < (uint32_t)iface->nprocs &&
           a.md_proc < (uint32_t)iface->nprocs;
}

/* Attaches a peer's active-message card and its memory domain's deposit
 * card (mapping segments that exist: the peer made them before it had an
 * address to hand out), and asks it to attach my deposit card (hello). */
ucs_status_t uct_hpam_iface_connect_peer(uct_hpam_iface_t *iface, int peer, uint32_t md_proc)
{
    uct_hpam_peer_t *p = &iface->peers[peer];
    if (p->lost) return UCS_ERR_ENDPOINT_TIMEOUT;
    if (!p->connected) {
        uct_hpam_am_enter(iface);
        const int rc = hpam_connect(iface->am, peer);
        uct_hpam_am_leave(iface);
        if (rc != HPAM_OK) {
            ucs_error("hpam: cannot attach the card of process %d of job %s: %s", peer,
                      iface->md->params.job, hpam_last_error());
            return UCS_ERR_UNREACHABLE;
        }
        p->connected = 1;
    }
    if (!p->dep_attached) {
        const int rc = hpam_dep_attach(iface->dep, (int)md_proc);
        if (rc != HPAM_OK) {
            ucs_error("hpam: cannot attach the deposit card %u of job %s (process %d's memory "
                      "domain): %s",
                      md_proc, iface->md->params.job, peer, hpam_dep_last_error());
            return UCS_ERR_UNREACHABLE;
        }
        p->dep_attached = 1;
        p->md_proc = md_proc;
    }
    if (p->hello == UCT_HPAM_HELLO_NONE) {
        if (uct_hpam_attach_in_process(iface, peer)) {
            p->hello = UCT_HPAM_HELLO_DONE;
        } else {
            p->hello = UCT_HPAM_HELLO_WANTED;
            iface->hello_wanted++;
        }
    }
    return UCS_OK;
}

void uct_hpam_iface_note_lost(uct_hpam_iface_t *iface, int peer)
{
    uct_hpam_peer_t *p = &iface->peers[peer];
    if (p->lost) return;
    p->lost = 1;
    iface->lost_unreported++;
    if (p->hello == UCT_HPAM_HELLO_WANTED) iface->hello_wanted--;
    p->hello = UCT_HPAM_HELLO_FAILED;
}

/* Say which peer was lost, then fail its endpoints through UCX's error
 * handler (outside any handler and any send call). */
static void report_lost(uct_hpam_iface_t *iface)
{
    for (int peer = 0; peer < iface->nprocs && iface->lost_unreported != 0; ++peer) {
        uct_hpam_peer_t *p = &iface->peers[peer];
        if (!p->lost || p->reported) continue;
        p->reported = 1;
        iface->lost_unreported--;
        ucs_error("hpam: lost peer: process %d (pid %d) of job %s, seen from process %d: %s. "
                  "Rerun, or raise UCX_HPAM_GIVE_UP_MS if it was only slow.",
                  peer, uct_hpam_registry_pid(iface->md->params.job, peer), iface->md->params.job,
                  iface->proc, hpam_last_error());
        uct_hpam_ep_fail_all(iface, peer);
    }
}

/* The memory domain's deposit card answers peers' deposits into this
 * process's registered memory; any interface on the domain may serve it.
 * With nothing registered there is nothing to serve, and while the card is
 * quiet (hpam_dep_quiet: no local work, nothing in its inbound FIFO) the
 * lock is not taken. Its words are bound before the first registration
 * counts (release, acquire here). */
static void uct_hpam_serve_md(uct_hpam_iface_t *iface)
{
    uct_hpam_md_t *md = iface->md;
    if (__atomic_load_n(&md->registrations, __ATOMIC_ACQUIRE) == 0 || hpam_dep_quiet(&md->quiet) ||
        !uct_hpam_md_trylock(md)) {
        return;
    }
    hpam_dep_progress(md->dep);
    uct_hpam_md_unlock(md);
}

/* Help between interfaces. HPAM resends a lost packet only from the
 * sending card's poll, and a UCX user may wait on one worker for a long
 * time progressing only it (Open MPI's osc ucx in MPI_Win_start and
 * MPI_Win_wait, with pml ucx's interface idle): a message pml's interface
 * sent and the wire lost or held back would then never go out again, and
 * the peer waiting for it would never answer what we wait for. So every
 * UCT_HPAM_HELP_PERIOD calls, progress looks at the process's other
 * interfaces and, for one whose own progress has not run since the last
 * look, walks its timeouts (hpam_resend_due: resends and held packets, no
 * receiving, no handlers: its handlers run only from its own progress) and
 * serves its memory domain's deposit card. Helpers take `am_busy` without
 * waiting; the owner takes it around every call into its endpoint. */
static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static UCS_LIST_HEAD(process_ifaces);

void uct_hpam_iface_join_process(uct_hpam_iface_t *iface)
{
    pthread_mutex_lock(&process_lock);
    ucs_list_add_tail(&process_ifaces, &iface->process_link);
    pthread_mutex_unlock(&process_lock);
}

void uct_hpam_iface_leave_process(uct_hpam_iface_t *iface)
{
    pthread_mutex_lock(&process_lock);
    ucs_list_del(&iface->process_link);
    pthread_mutex_unlock(&process_lock);
}

/* A peer that is an interface of this process: its memory domain attaches
 * my deposit card at once (what the hello asks of the peer's progress), so
 * put, get and atomics to it need no progress of that interface, only the
 * serving of its domain that any interface of the process does (UCX's
 * atomic tests drive the initiator from threads while the target's worker
 * is idle). 1 when done. */
int uct_hpam_attach_in_process(uct_hpam_iface_t *iface, int peer)
{
    int done = 0;
    uct_hpam_iface_t *other;
    pthread_mutex_lock(&process_lock);
    ucs_list_for_each (other, &process_ifaces, process_link) {
        if (other->proc != peer || other->md->params.job_hash != iface->md->params.job_hash) {
            continue;
        }
        uct_hpam_md_lock(other->md);
        done = hpam_dep_attach(other->md->dep, iface->proc) == HPAM_OK;
        uct_hpam_md_unlock(other->md);
        break;
    }
    pthread_mutex_unlock(&process_lock);
    return done;
}

static void help(uct_hpam_iface_t *other)
{
    const uint64_t calls = __atomic_load_n(&other->progress_calls, __ATOMIC_RELAXED);
    if (calls != other->progress_seen) { /* its owner progresses it */
        other->progress_seen = calls;
        return;
    }
    uct_hpam_serve_md(other);
    if (__atomic_exchange_n(&other->am_busy, 1, __ATOMIC_ACQUIRE)) return;
    (void)hpam_resend_due(other->am);
    other->helped++;
    __atomic_store_n(&other->am_busy, 0, __ATOMIC_RELEASE);
}

static void help_others(uct_hpam_iface_t *iface)
{
    if (pthread_mutex_trylock(&process_lock) != 0) return;
    uct_hpam_iface_t *other;
    ucs_list_for_each (other, &process_ifaces, process_link) {
        if (other != iface) help(other);
    }
    pthread_mutex_unlock(&process_lock);
}

static int poll_am(uct_hpam_iface_t *iface)
{
    uct_hpam_am_enter(iface);
    int n = hpam_poll_now(iface->am, &iface->poll_now);
    if (ucs_unlikely(n < 0)) {
        if (n == HPAM_ERR_UNREACHABLE) {
            for (int p = 0; p < iface->nprocs; ++p) {
                if (hpam_peer_lost(iface->am, p)) uct_hpam_iface_note_lost(iface, p);
            }
        }
        n = 0;
    }
    uct_hpam_am_leave(iface);
    return n;
}

unsigned uct_hpam_iface_progress(uct_iface_h tl_iface)
{
    uct_hpam_iface_t *iface = ucs_derived_of(tl_iface, uct_hpam_iface_t);
    if (ucs_unlikely(hpam_in_handler(iface->am))) return 0; /* called from a UCX handler */
    const uint64_t calls = iface->progress_calls + 1;
    __atomic_store_n(&iface->progress_calls, calls, __ATOMIC_RELAXED);
    if (ucs_unlikely(calls % UCT_HPAM_HELP_PERIOD == 0)) help_others(iface);
    const int n = poll_am(iface);
    if (ucs_unlikely(iface->lost_unreported != 0)) report_lost(iface);
    unsigned count = (unsigned)n;
    if (ucs_unlikely(hpam_order_due(&iface->order, iface->proc))) {
        count += uct_hpam_am_deliver_self(iface);
    }
    if (ucs_unlikely(iface->hello_wanted != 0)) uct_hpam_send_hellos(iface);
    count += uct_hpam_rma_progress(iface);
    uct_hpam_serve_md(iface);
    if (iface->pending.first != NULL) count += uct_hpam_dispatch_pending(iface);
    if (ucs_unlikely(iface->nwaiters != 0)) count += uct_hpam_flush_progress(iface);
    return count;
}

uct_iface_ops_t uct_hpam_iface_ops = {
    .ep_put_short = uct_hpam_ep_put_short,
    .ep_put_bcopy = uct_hpam_ep_put_bcopy,
    .ep_put_zcopy = uct_hpam_ep_put_zcopy,
    .ep_get_bcopy = uct_hpam_ep_get_bcopy,
    .ep_get_zcopy = uct_hpam_ep_get_zcopy,
    .ep_am_short = uct_hpam_ep_am_short,
    .ep_am_short_iov = uct_hpam_ep_am_short_iov,
    .ep_am_bcopy = uct_hpam_ep_am_bcopy,
    .ep_atomic_cswap64 = uct_hpam_ep_atomic_cswap64,
    .ep_atomic_cswap32 = uct_hpam_ep_atomic_cswap32,
    .ep_atomic64_post = uct_hpam_ep_atomic64_post,
    .ep_atomic32_post = uct_hpam_ep_atomic32_post,
    .ep_atomic64_fetch = uct_hpam_ep_atomic64_fetch,
    .ep_atomic32_fetch = uct_hpam_ep_atomic32_fetch,
    .ep_pending_add = uct_hpam_ep_pending_add,
    .ep_pending_purge = uct_hpam_ep_pending_purge,
    .ep_flush = uct_hpam_ep_flush,
    .ep_fence = uct_hpam_ep_fence,
    .ep_check = uct_hpam_ep_check,
    .ep_create = uct_hpam_ep_create,
    .ep_destroy = uct_hpam_ep_destroy,
    .iface_flush = uct_hpam_iface_flush,
    .iface_fence = uct_hpam_iface_fence,
    .iface_progress_enable = uct_base_iface_progress_enable,
    .iface_progress_disable = uct_base_iface_progress_disable,
    .iface_progress = uct_hpam_iface_progress,
    .iface_close = uct_hpam_iface_close,
    .iface_query = uct_hpam_iface_query,
    .iface_get_device_address = uct_sm_iface_get_device_address,
    .iface_get_address = uct_hpam_iface_get_address,
    .iface_is_reachable = uct_hpam_iface_is_reachable,
};
