/*
 * The UCX_HPAM_* configuration variables (the memory domain's table, so one
 * set of values serves the domain and every interface on it), each with a
 * one-line help shown by `ucx_info -c -f`, and their checks. A value out of
 * range is refused while UCX parses it, with the variable's full name and
 * its valid range; rules between variables are checked when the domain
 * opens. The names, defaults and ranges are those of the BTL's btl_hpam_*
 * parameters.
 */
#include "config.h"

#include "hpam_uct.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A number the parser checks, and how to name it in an error. */
typedef struct knob {
    const char *var;  /* UCX_HPAM_<NAME> */
    int64_t min, max; /* whole numbers */
    double rmin, rmax;/* reals */
    int power_of_two; /* only powers of two in [min, max] */
} knob_t;

struct uct_hpam_md_config {
    uct_md_config_t super;
    char *nic, *job;
    long max_procs, depth, block_size, packet_size, rx_blocks, timeout_us, backoff_limit;
    long give_up_ms, checks_per_poll, fault_delay_us, fault_seed, attach_timeout_ms;
    long receive_budget;
    int key_check, crc_check, defer_acks, stats;
    double fault_drop, fault_duplicate, fault_corrupt, fault_reorder, fault_delay;
};

size_t uct_hpam_md_config_size(void) { return sizeof(uct_hpam_md_config_t); }

static int read_whole(const char *buf, void *dest, const void *arg)
{
    const knob_t *k = arg;
    char *end;
    errno = 0;
    const long long v = strtoll(buf, &end, 0);
    if (errno != 0 || end == buf || *end != '\0' || v < k->min || v > k->max) return 0;
    if (k->power_of_two && (v & (v - 1)) != 0) return 0;
    *(long *)dest = (long)v;
    return 1;
}

static int write_whole(char *buf, size_t max, const void *src, const void *arg)
{
    return snprintf(buf, max, "%ld", *(const long *)src);
}

static ucs_status_t clone_whole(const void *src, void *dest, const void *arg)
{
    *(long *)dest = *(const long *)src;
    return UCS_OK;
}

static void help_whole(char *buf, size_t max, const void *arg)
{
    const knob_t *k = arg;
    snprintf(buf, max, "%s, %s in [%" PRId64 ", %" PRId64 "]", k->var,
             k->power_of_two ? "a power of two" : "a whole number", k->min, k->max);
}

static int read_real(const char *buf, void *dest, const void *arg)
{
    const knob_t *k = arg;
    char *end;
    errno = 0;
    const double v = strtod(buf, &end);
    if (errno != 0 || end == buf || *end != '\0' || !(v >= k->rmin && v <= k->rmax)) return 0;
    *(double *)dest = v;
    return 1;
}

static void help_real(char *buf, size_t max, const void *arg)
{
    const knob_t *k = arg;
    snprintf(buf, max, "%s, a number in [%g, %g]", k->var, k->rmin, k->rmax);
}

#define WHOLE(_k) {read_whole, write_whole, clone_whole, ucs_config_release_nop, help_whole, &(_k)}
#define REAL(_k)                                                                                \
    {read_real, ucs_config_sprintf_double, ucs_config_clone_double, ucs_config_release_nop,      \
     help_real, &(_k)}
#define OFF(_f) ucs_offsetof(uct_hpam_md_config_t, _f)

static const knob_t k_max_procs = {"UCX_HPAM_MAX_PROCS", 2, UCT_HPAM_REGISTRY_MAX_PROCS};
static const knob_t k_depth = {"UCX_HPAM_DEPTH", 1, 64};
static const knob_t k_block = {"UCX_HPAM_BLOCK_SIZE", 256, 65536, .power_of_two = 1};
static const knob_t k_packet = {"UCX_HPAM_PACKET_SIZE", 256, 65536, .power_of_two = 1};
static const knob_t k_rx = {"UCX_HPAM_RX_BLOCKS", 0, 1 << 20};
static const knob_t k_timeout = {"UCX_HPAM_TIMEOUT_US", 1, 3600000000LL};
static const knob_t k_backoff = {"UCX_HPAM_BACKOFF_LIMIT", 0, 30};
static const knob_t k_give_up = {"UCX_HPAM_GIVE_UP_MS", 1, 3600000};
static const knob_t k_checks = {"UCX_HPAM_CHECKS_PER_POLL", 1, 65536};
static const knob_t k_delay_us = {"UCX_HPAM_FAULT_DELAY_US", 0, 10000000};
static const knob_t k_seed = {"UCX_HPAM_FAULT_SEED", 0, INT64_MAX};
static const knob_t k_attach = {"UCX_HPAM_ATTACH_TIMEOUT_MS", 1, 3600000};
static const knob_t k_budget = {"UCX_HPAM_RECEIVE_BUDGET", 1, 65536};
static const knob_t k_drop = {"UCX_HPAM_FAULT_DROP", .rmin = 0, .rmax = 1};
static const knob_t k_dup = {"UCX_HPAM_FAULT_DUPLICATE", .rmin = 0, .rmax = 1};
static const knob_t k_corrupt = {"UCX_HPAM_FAULT_CORRUPT", .rmin = 0, .rmax = 1};
static const knob_t k_reorder = {"UCX_HPAM_FAULT_REORDER", .rmin = 0, .rmax = 1};
static const knob_t k_delay = {"UCX_HPAM_FAULT_DELAY", .rmin = 0, .rmax = 1};

ucs_config_field_t uct_hpam_md_config_table[] = {
    {"", "", NULL, OFF(super), UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},
    {"NIC", "medusa",
     "Card under the active messages: medusa (HPAM FIFOs) or hamlyn (sender-managed\n"
     "regions, notification queue). The transport's device carries this name.",
     OFF(nic), UCS_CONFIG_TYPE_STRING},
    {"JOB", "auto",
     "Processes that talk over hpam form a job: one registry of process indices, one\n"
     "protection key, one card shape. auto: the launcher's job (PMIX_NAMESPACE) when\n"
     "there is one, else every process of this user on the node.",
     OFF(job), UCS_CONFIG_TYPE_STRING},
    {"MAX_PROCS", "32",
     "Process indices a job can hand out (each memory domain and interface takes one);\n"
     "cards are sized for this many peers.",
     OFF(max_procs), WHOLE(k_max_procs)},
    {"DEPTH", "4", "D, request-reply instances per peer (Medusa: 4).", OFF(depth), WHOLE(k_depth)},
    {"BLOCK_SIZE", "8192", "Card block size = largest packet, bytes.", OFF(block_size),
     WHOLE(k_block)},
    {"PACKET_SIZE", "65536",
     "Packet size of sender-based deposits: one cross-memory call or one fallback\n"
     "packet each, bytes.",
     OFF(packet_size), WHOLE(k_packet)},
    {"RX_BLOCKS", "0",
     "Inbound card blocks (0 = worst case 2*(P-1)*D; fewer allowed for experiments).",
     OFF(rx_blocks), WHOLE(k_rx)},
    {"TIMEOUT_US", "1000", "First retransmission timeout, microseconds.", OFF(timeout_us),
     WHOLE(k_timeout)},
    {"BACKOFF_LIMIT", "10", "Most doublings of the retransmission timeout.", OFF(backoff_limit),
     WHOLE(k_backoff)},
    {"GIVE_UP_MS", "30000",
     "A peer silent this long is declared lost: its endpoints fail, naming it.", OFF(give_up_ms),
     WHOLE(k_give_up)},
    {"CHECKS_PER_POLL", "1", "K, request descriptors checked for timeout per poll.",
     OFF(checks_per_poll), WHOLE(k_checks)},
    {"KEY_CHECK", "y", "Check the job's protection key on every arriving packet.",
     OFF(key_check), UCS_CONFIG_TYPE_BOOL},
    {"CRC_CHECK", "y", "Compute and check a CRC32C on every packet.", OFF(crc_check),
     UCS_CONFIG_TYPE_BOOL},
    {"FAULT_DROP", "0", "Probability that the emulated wire drops a packet.", OFF(fault_drop),
     REAL(k_drop)},
    {"FAULT_DUPLICATE", "0", "Probability that the wire delivers a packet twice.",
     OFF(fault_duplicate), REAL(k_dup)},
    {"FAULT_CORRUPT", "0", "Probability that the wire flips bits of a packet.",
     OFF(fault_corrupt), REAL(k_corrupt)},
    {"FAULT_REORDER", "0", "Probability that the wire holds a packet back behind the next.",
     OFF(fault_reorder), REAL(k_reorder)},
    {"FAULT_DELAY", "0", "Probability that the wire delays a packet by FAULT_DELAY_US.",
     OFF(fault_delay), REAL(k_delay)},
    {"FAULT_DELAY_US", "100", "How long a delayed packet is held, microseconds.",
     OFF(fault_delay_us), WHOLE(k_delay_us)},
    {"FAULT_SEED", "1", "Seed of the wire's fault generator (mixed with the process index).",
     OFF(fault_seed), WHOLE(k_seed)},
    {"ATTACH_TIMEOUT_MS", "60000", "How long to wait for a peer's card to appear, milliseconds.",
     OFF(attach_timeout_ms), WHOLE(k_attach)},
    {"RECEIVE_BUDGET", "1",
     "Most packets one progress call handles; 1 returns to UCX after each packet.",
     OFF(receive_budget), WHOLE(k_budget)},
    {"DEFER_ACKS", "y",
     "Launch empty acknowledgements after the next send or poll instead of at once.",
     OFF(defer_acks), UCS_CONFIG_TYPE_BOOL},
    {"STATS", "n", "Print the protocol counters of each interface when it closes.", OFF(stats),
     UCS_CONFIG_TYPE_BOOL},
    {NULL}};

/* The launcher's job id, or the node (every process of this user). */
static void job_tag(const char *setting, char *out, size_t len)
{
    const char *src = setting;
    if (0 == strcmp(setting, "auto")) {
        const char *ns = getenv("PMIX_NAMESPACE");
        src = (ns && *ns) ? ns : "node";
    }
    size_t n = 0;
    for (const char *s = src; *s && n + 1 < len; ++s) {
        const char c = *s;
        const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; ++s) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* Rules between variables and the ones UCX's parser does not range-check. */
static ucs_status_t check(const uct_hpam_md_config_t *c)
{
    if (0 != strcmp(c->nic, "medusa") && 0 != strcmp(c->nic, "hamlyn")) {
        ucs_error("invalid UCX_HPAM_NIC=%s: valid values are medusa, hamlyn", c->nic);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((int64_t)c->timeout_us > (int64_t)c->give_up_ms * 1000) {
        ucs_error("invalid UCX_HPAM_TIMEOUT_US=%ld: valid range is [1, UCX_HPAM_GIVE_UP_MS * 1000 = "
                  "%ld]", c->timeout_us, c->give_up_ms * 1000);
        return UCS_ERR_INVALID_PARAM;
    }
    if (strlen(c->job) == 0 || strlen(c->job) > 40) {
        ucs_error("invalid UCX_HPAM_JOB='%s': 1 to 40 characters, or auto", c->job);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t uct_hpam_params_from_config(const uct_md_config_t *config, uct_hpam_params_t *p)
{
    const uct_hpam_md_config_t *c = ucs_derived_of(config, uct_hpam_md_config_t);
    ucs_status_t status = check(c);
    if (status != UCS_OK) return status;
    memset(p, 0, sizeof(*p));
    char tag[48];
    job_tag(c->job, tag, sizeof tag);
    snprintf(p->job, sizeof p->job, "ucx-%s", tag);
    p->job_hash = fnv1a(p->job);
    hpam_config_t *am = &p->am;
    hpam_config_init(am);
    am->nic = 0 == strcmp(c->nic, "hamlyn") ? "hamlyn" : "medusa"; /* static strings */
    am->job = p->job;
    am->nprocs = (int)c->max_procs;
    am->depth = (uint32_t)c->depth;
    am->block_size = (uint32_t)c->block_size;
    am->rx_blocks = (uint32_t)c->rx_blocks;
    am->timeout_ns = (uint64_t)c->timeout_us * 1000;
    am->backoff_limit = (uint32_t)c->backoff_limit;
    am->give_up_ns = (uint64_t)c->give_up_ms * 1000000;
    am->checks_per_poll = (uint32_t)c->checks_per_poll;
    am->key_check = c->key_check;
    am->crc_check = c->crc_check;
    am->attach_timeout_ms = (uint64_t)c->attach_timeout_ms;
    am->fault_drop = c->fault_drop;
    am->fault_duplicate = c->fault_duplicate;
    am->fault_corrupt = c->fault_corrupt;
    am->fault_reorder = c->fault_reorder;
    am->fault_delay = c->fault_delay;
    am->fault_delay_ns = (uint64_t)c->fault_delay_us * 1000;
    am->fault_seed = (uint64_t)c->fault_seed;
    am->poll_on_send = 0; /* the transport polls from its progress only */
    am->defer_acks = c->defer_acks;
    am->receive_budget = (uint32_t)c->receive_budget;
    hpam_dep_config_init(&p->dep);
    p->dep.job = NULL; /* set per card: "<job>-dep" */
    p->dep.nprocs = am->nprocs;
    p->dep.packet_size = (uint32_t)c->packet_size;
    p->dep.attach_timeout_ms = am->attach_timeout_ms;
    p->shape.nic = 0 == strcmp(am->nic, "hamlyn");
    p->shape.depth = am->depth;
    p->shape.block_size = am->block_size;
    p->shape.packet_size = p->dep.packet_size;
    p->shape.crc_check = am->crc_check != 0;
    p->shape.max_procs = (uint32_t)am->nprocs;
    p->stats = c->stats;
    return UCS_OK;
}
