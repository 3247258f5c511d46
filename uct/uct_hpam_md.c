/*
 * The hpam UCT component and its memory domain: registration makes a
 * Hamlyn slot with its own protection key on the domain's deposit card, the
 * packed rkey carries the slot's ticket. The component registers itself
 * (with its one transport) from this library's constructor, since Debian's
 * libuct loads only the modules it was built with: load the library with
 * LD_PRELOAD.
 */

#include "uct_hpam.h"

#include <limits.h>
#include <sched.h>
#include <string.h>

ucs_status_t uct_hpam_status(int err)
{
    switch (err) {
    case HPAM_OK: return UCS_OK;
    case HPAM_ERR_BUSY:
    case HPAM_ERR_AGAIN: return UCS_ERR_NO_RESOURCE;
    case HPAM_ERR_UNREACHABLE: return UCS_ERR_ENDPOINT_TIMEOUT;
    case HPAM_ERR_INVALID: return UCS_ERR_INVALID_PARAM;
    case HPAM_ERR_REJECTED: return UCS_ERR_REJECTED;
    case HPAM_ERR_NO_RESOURCE: return UCS_ERR_NO_MEMORY;
    case HPAM_ERR_NOT_SUPPORTED: return UCS_ERR_UNSUPPORTED;
    case HPAM_ERR_RULE: /* the transport never sends from a handler: a bug */
    case HPAM_ERR_SYSTEM:
    default: return UCS_ERR_IO_ERROR;
    }
}

int uct_hpam_md_trylock(uct_hpam_md_t *md)
{
    int expected = 0;
    return __atomic_compare_exchange_n(&md->lock, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

void uct_hpam_md_lock(uct_hpam_md_t *md)
{
    while (!uct_hpam_md_trylock(md)) sched_yield(); /* set-up paths only */
}

void uct_hpam_md_unlock(uct_hpam_md_t *md) { __atomic_store_n(&md->lock, 0, __ATOMIC_RELEASE); }

/* The domain's deposit card, made on first need (registration, or an
 * interface that must answer peers' deposits). Call with the lock held. */
ucs_status_t uct_hpam_md_dep_ready(uct_hpam_md_t *md)
{
    if (md->dep != NULL) return UCS_OK;
    char err[512], job[80];
    uint64_t key;
    int proc;
    (void)uct_hpam_registry_sweep(); /* registries of killed jobs */
    if (uct_hpam_registry_join(md->params.job, &md->params.shape, &proc, &key, err, sizeof err)) {
        ucs_error("hpam: %s", err);
        return UCS_ERR_NO_RESOURCE;
    }
    uct_hpam_dep_job(md->params.job, job, sizeof job);
    hpam_dep_config_t cfg = md->params.dep;
    cfg.job = job;
    cfg.my_proc = proc;
    cfg.attach_timeout_ms = UCT_HPAM_MD_ATTACH_TIMEOUT_MS;
    if (HPAM_OK != hpam_dep_create(&cfg, &md->dep)) {
        ucs_error("hpam: cannot create the memory domain's deposit card (process %d of job %s): %s",
                  proc, md->params.job, hpam_dep_last_error());
        uct_hpam_registry_leave(md->params.job, proc);
        md->dep = NULL;
        return UCS_ERR_NO_RESOURCE;
    }
    (void)hpam_dep_quiet_bind(md->dep, &md->quiet);
    md->dep_proc = proc;
    return UCS_OK;
}

void uct_hpam_md_dep_counters(uct_md_h tl_md, hpam_dep_counters_t *out)
{
    const uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    memset(out, 0, sizeof(*out));
    if (md->dep != NULL) hpam_dep_get_counters(md->dep, out);
}

static void uct_hpam_md_close(uct_md_h tl_md)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    if (md->registrations > 0) {
        ucs_warn("hpam: memory domain closed with %u registrations left", md->registrations);
    }
    if (md->dep != NULL && md->params.stats) {
        hpam_dep_counters_t c;
        hpam_dep_get_counters(md->dep, &c);
        ucs_info("hpam: memory domain of process %d of job %s: deposits %lu; refused: key %lu, "
                 "bounds %lu, revoked %lu, malformed %lu",
                 md->dep_proc, md->params.job, c.packets, c.key_rejections, c.bounds_rejections,
                 c.revoked_rejections, c.malformed);
    }
    if (md->dep != NULL) {
        hpam_dep_destroy(md->dep);
        uct_hpam_registry_leave(md->params.job, md->dep_proc);
    }
    ucs_free(md);
}

static ucs_status_t uct_hpam_md_query(uct_md_h tl_md, uct_md_attr_t *attr)
{
    attr->cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ALLOC;
    attr->cap.reg_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.alloc_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->cap.max_alloc = ULONG_MAX; /* card memory, else private memory */
    attr->cap.max_reg = ULONG_MAX;
    attr->rkey_packed_size = sizeof(uct_hpam_packed_rkey_t);
    /* A slot and its key in the card's table: a few microseconds. */
    attr->reg_cost = ucs_linear_func_make(2e-6, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_hpam_mem_reg(uct_md_h tl_md, void *address, size_t length, unsigned flags,
                                     uct_mem_h *memh_p)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    if (length == 0) return UCS_ERR_INVALID_PARAM;
    uct_hpam_memh_t *memh = ucs_malloc(sizeof(*memh), "hpam memh");
    if (memh == NULL) return UCS_ERR_NO_MEMORY;
    uct_hpam_md_lock(md);
    ucs_status_t status = uct_hpam_md_dep_ready(md);
    int rc = HPAM_ERR_NO_RESOURCE;
    if (status == UCS_OK) {
        rc = hpam_dep_register(md->dep, address, length, &memh->ticket);
        if (rc == HPAM_OK) __atomic_add_fetch(&md->registrations, 1, __ATOMIC_RELEASE);
    }
    uct_hpam_md_unlock(md);
    if (status == UCS_OK && rc != HPAM_OK) {
        uct_md_log_mem_reg_error(flags, "hpam: cannot register %zu bytes at %p: %s", length,
                                 address, hpam_strerror(rc));
        status = uct_hpam_status(rc);
    }
    if (status != UCS_OK) {
        ucs_free(memh);
        return status;
    }
    memh->base = (uintptr_t)address;
    memh->length = length;
    memh->allocated = UCT_HPAM_MEMH_REGISTERED;
    *memh_p = memh;
    return UCS_OK;
}

/* Memory for the user (UCT_MD_FLAG_ALLOC): card memory, a Hamlyn message
 * area in the deposit card's segment, which peers write and read directly
 * and whose atomics they do with CPU atomics (no system call, no work by
 * this process). Counted against the card's memory (card_memory); once that
 * is used up, private memory registered as mem_reg would, so an allocation
 * that could succeed never fails for want of card memory. Zeroed. */
static ucs_status_t uct_hpam_mem_alloc(uct_md_h tl_md, size_t *length_p, void **address_p,
                                       ucs_memory_type_t mem_type, unsigned flags,
                                       const char *alloc_name, uct_mem_h *memh_p)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    if (mem_type != UCS_MEMORY_TYPE_HOST || (flags & UCT_MD_MEM_FLAG_FIXED)) {
        return UCS_ERR_UNSUPPORTED; /* card memory lies where the card's segment is */
    }
    if (*length_p == 0) return UCS_ERR_INVALID_PARAM;
    uct_hpam_memh_t *memh = ucs_malloc(sizeof(*memh), "hpam memh");
    if (memh == NULL) return UCS_ERR_NO_MEMORY;
    void *address = NULL;
    uct_hpam_md_lock(md);
    ucs_status_t status = uct_hpam_md_dep_ready(md);
    int rc = HPAM_ERR_NO_RESOURCE;
    if (status == UCS_OK) {
        rc = hpam_dep_allocate(md->dep, *length_p, &address, &memh->ticket);
        memh->allocated = UCT_HPAM_MEMH_CARD;
        if (rc == HPAM_ERR_NO_RESOURCE && ucs_posix_memalign(&address, UCS_SYS_CACHE_LINE_SIZE,
                                                             *length_p, alloc_name) == UCS_OK) {
            memset(address, 0, *length_p);
            rc = hpam_dep_register(md->dep, address, *length_p, &memh->ticket);
            memh->allocated = UCT_HPAM_MEMH_PRIVATE;
            if (rc != HPAM_OK) ucs_free(address);
        }
        if (rc == HPAM_OK) __atomic_add_fetch(&md->registrations, 1, __ATOMIC_RELEASE);
    }
    uct_hpam_md_unlock(md);
    if (status == UCS_OK && rc != HPAM_OK) status = uct_hpam_status(rc);
    if (status != UCS_OK) {
        ucs_debug("hpam: cannot allocate %zu bytes for %s: %s", *length_p, alloc_name,
                  ucs_status_string(status));
        ucs_free(memh);
        return status;
    }
    memh->base = (uintptr_t)address;
    memh->length = *length_p;
    *address_p = address;
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t uct_hpam_mem_free(uct_md_h tl_md, uct_mem_h tl_memh)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    uct_hpam_memh_t *memh = tl_memh;
    uct_hpam_md_lock(md);
    const int rc = hpam_dep_deregister(md->dep, &memh->ticket); /* frees card memory too */
    __atomic_sub_fetch(&md->registrations, 1, __ATOMIC_RELAXED);
    uct_hpam_md_unlock(md);
    if (memh->allocated == UCT_HPAM_MEMH_PRIVATE) ucs_free((void *)(uintptr_t)memh->base);
    ucs_free(memh);
    return uct_hpam_status(rc);
}

static ucs_status_t uct_hpam_mem_dereg(uct_md_h tl_md, const uct_md_mem_dereg_params_t *params)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    uct_hpam_memh_t *memh = params->memh;
    uct_hpam_md_lock(md);
    const int rc = hpam_dep_deregister(md->dep, &memh->ticket);
    __atomic_sub_fetch(&md->registrations, 1, __ATOMIC_RELAXED);
    uct_hpam_md_unlock(md);
    ucs_free(memh);
    return uct_hpam_status(rc);
}

static ucs_status_t uct_hpam_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                                       const uct_md_mkey_pack_params_t *params, void *buffer)
{
    uct_hpam_md_t *md = ucs_derived_of(tl_md, uct_hpam_md_t);
    uct_hpam_rkey_pack(memh, (uint32_t)md->dep_proc, md->params.job_hash, buffer);
    return UCS_OK;
}

static ucs_status_t uct_hpam_rkey_unpack_cb(uct_component_t *component, const void *buffer,
                                            uct_rkey_t *rkey_p, void **handle_p)
{
    uct_hpam_rkey_t *rkey = ucs_malloc(sizeof(*rkey), "hpam rkey");
    if (rkey == NULL) return UCS_ERR_NO_MEMORY;
    char err[160];
    if (uct_hpam_rkey_unpack(buffer, rkey, err, sizeof err) != 0) {
        ucs_error("hpam: rkey_unpack: %s", err);
        ucs_free(rkey);
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p = (uintptr_t)rkey;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t uct_hpam_rkey_release(uct_component_t *component, uct_rkey_t rkey, void *handle)
{
    ucs_free((void *)rkey);
    return UCS_OK;
}

static uct_md_ops_t uct_hpam_md_ops = {
    .close = uct_hpam_md_close,
    .query = uct_hpam_md_query,
    .mem_alloc = uct_hpam_mem_alloc,
    .mem_free = uct_hpam_mem_free,
    .mem_advise = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg = uct_hpam_mem_reg,
    .mem_dereg = uct_hpam_mem_dereg,
    .mem_query = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack = uct_hpam_mkey_pack,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)ucs_empty_function_return_zero,
    .detect_memory_type = (uct_md_detect_memory_type_func_t)ucs_empty_function_return_unsupported,
};

static ucs_status_t uct_hpam_md_open(uct_component_t *component, const char *md_name,
                                     const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_hpam_md_t *md = ucs_calloc(1, sizeof(*md), "hpam md");
    if (md == NULL) return UCS_ERR_NO_MEMORY;
    ucs_status_t status = uct_hpam_params_from_config(config, &md->params);
    if (status != UCS_OK) {
        ucs_free(md);
        return status;
    }
    md->super.ops = &uct_hpam_md_ops;
    md->super.component = &uct_hpam_component;
    md->dep = NULL;
    md->dep_proc = -1;
    *md_p = &md->super;
    return UCS_OK;
}

uct_component_t uct_hpam_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open = uct_hpam_md_open,
    .cm_open = (uct_component_cm_open_func_t)ucs_empty_function_return_unsupported,
    .rkey_unpack = uct_hpam_rkey_unpack_cb,
    .rkey_ptr = (uct_component_rkey_ptr_func_t)ucs_empty_function_return_unsupported,
    .rkey_release = uct_hpam_rkey_release,
    .name = UCT_HPAM_NAME,
    .md_config = {.name = "hpam memory domain",
                  .prefix = UCT_HPAM_CONFIG_PREFIX,
                  .table = uct_hpam_md_config_table,
                  .size = 0 /* set by the constructor */},
    .cm_config = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_hpam_component),
    .flags = 0,
    .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function};

/* The transport (UCT_TL_DEFINE_ENTRY spelled out: the memory domain's
 * configuration size comes from the file that owns the structure). */
uct_tl_t uct_hpam_tl = {
    .name = UCT_HPAM_NAME,
    .query_devices = uct_hpam_query_devices,
    .iface_open = uct_hpam_iface_open,
    .config = {.name = "hpam transport",
               .prefix = UCT_HPAM_CONFIG_PREFIX,
               .table = uct_hpam_iface_config_table,
               .size = sizeof(uct_hpam_iface_config_t)},
};

/* Registration from the library's constructor (what UCX's UCT_SINGLE_TL_INIT
 * does in constructor scope), after the configuration table is built from
 * the knob table; unregistration from the destructor. */
static int registered;

UCS_F_CTOR void uct_hpam_init(void)
{
    if (uct_hpam_md_config_build() != 0) {
        ucs_error("hpam: the knob table has more than %d knobs: rebuild libuct_hpam with a larger "
                  "UCT_HPAM_MAX_KNOBS; the hpam transport is not registered",
                  UCT_HPAM_MAX_KNOBS);
        return;
    }
    uct_hpam_component.md_config.size = uct_hpam_md_config_size();
    uct_component_register(&uct_hpam_component);
    uct_tl_register(&uct_hpam_component, &uct_hpam_tl);
    registered = 1;
}

UCS_F_DTOR void uct_hpam_cleanup(void)
{
    if (!registered) return;
    uct_tl_unregister(&uct_hpam_tl);
    uct_component_unregister(&uct_hpam_component);
}
