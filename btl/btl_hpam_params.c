/*
 * MCA parameters of btl/hpam: every knob of the papers, each with a one-line
 * help, and their validation. A bad value is reported with the parameter's
 * full name and its valid range, and the component then ends the whole job
 * through the runtime (btl_hpam_component.c), even when tcp could carry on.
 */
#include "btl_hpam.h"

#include <string.h>

#include "opal/util/output.h"

#define P (&mca_btl_hpam_component.params)

static int reg(const char *name, const char *help, mca_base_var_type_t type, int level,
               void *storage)
{
    int rc = mca_base_component_var_register(&mca_btl_hpam_component.super.btl_version, name, help,
                                             type, NULL, 0, 0, level,
                                             MCA_BASE_VAR_SCOPE_READONLY, storage);
    return rc < 0 ? rc : OPAL_SUCCESS;
}

int mca_btl_hpam_params_register(void)
{
    static char *nic_default = "medusa";
    P->nic = nic_default;
    P->depth = 4;
    P->block_size = 8192;
    P->packet_size = 65536;
    P->rx_blocks = 0;
    P->timeout_us = 1000;
    P->backoff_limit = 10;
    P->give_up_ms = 30000;
    P->checks_per_poll = 1;
    P->key_check = true;
    P->crc_check = true;
    P->fault_drop = P->fault_duplicate = P->fault_corrupt = 0.0;
    P->fault_reorder = P->fault_delay = 0.0;
    P->fault_delay_us = 100;
    P->fault_seed = 1;
    P->attach_timeout_ms = 60000;
    P->verbose = 0;
    P->stats = false;
    P->defer_acks = true;
    P->receive_budget = 1;
    P->max_frags = 512;

    const struct {
        const char *name, *help;
        mca_base_var_type_t type;
        int level;
        void *storage;
    } vars[] = {
        {"nic", "NIC model under the active messages: medusa (HPAM FIFOs) or hamlyn (sender-managed regions)",
         MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_4, &P->nic},
        {"depth", "D, request-reply instances per peer (1-64; Medusa: 4)", MCA_BASE_VAR_TYPE_INT,
         OPAL_INFO_LVL_4, &P->depth},
        {"block_size", "Card block size = largest packet, bytes (power of two, 256-65536)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &P->block_size},
        {"packet_size", "Packet size of sender-based deposits: one cross-memory call or one fallback packet each, bytes (power of two, 256-65536)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &P->packet_size},
        {"rx_blocks", "Inbound card blocks (0 = worst case 2*(P-1)*D; fewer allowed for experiments, 0-1048576)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_6, &P->rx_blocks},
        {"timeout_us", "First retransmission timeout, microseconds (1-3600000000)", MCA_BASE_VAR_TYPE_INT,
         OPAL_INFO_LVL_5, &P->timeout_us},
        {"backoff_limit", "Most doublings of the retransmission timeout (0-30)", MCA_BASE_VAR_TYPE_INT,
         OPAL_INFO_LVL_6, &P->backoff_limit},
        {"give_up_ms", "A peer silent this long is declared unreachable and the job ends, milliseconds (1-3600000)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_4, &P->give_up_ms},
        {"checks_per_poll", "K, request descriptors checked for timeout per poll (1-65536)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_6, &P->checks_per_poll},
        {"key_check", "Check the job's protection key on every arriving packet", MCA_BASE_VAR_TYPE_BOOL,
         OPAL_INFO_LVL_5, &P->key_check},
        {"crc_check", "Compute and check a CRC32C on every packet", MCA_BASE_VAR_TYPE_BOOL,
         OPAL_INFO_LVL_5, &P->crc_check},
        {"fault_drop", "Probability that the emulated wire drops a packet (0-1)", MCA_BASE_VAR_TYPE_DOUBLE,
         OPAL_INFO_LVL_7, &P->fault_drop},
        {"fault_duplicate", "Probability that the wire delivers a packet twice (0-1)",
         MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_7, &P->fault_duplicate},
        {"fault_corrupt", "Probability that the wire flips bits of a packet (0-1)", MCA_BASE_VAR_TYPE_DOUBLE,
         OPAL_INFO_LVL_7, &P->fault_corrupt},
        {"fault_reorder", "Probability that the wire holds a packet back behind the next (0-1)",
         MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_7, &P->fault_reorder},
        {"fault_delay", "Probability that the wire delays a packet by fault_delay_us (0-1)",
         MCA_BASE_VAR_TYPE_DOUBLE, OPAL_INFO_LVL_7, &P->fault_delay},
        {"fault_delay_us", "How long a delayed packet is held, microseconds (0-10000000)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_7, &P->fault_delay_us},
        {"fault_seed", "Seed of the wire's fault generator (mixed with the local rank)",
         MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_7, &P->fault_seed},
        {"attach_timeout_ms", "How long to wait for a peer's card to appear, milliseconds (1-3600000)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_8, &P->attach_timeout_ms},
        {"verbose", "Verbosity of btl/hpam (0 = errors only, 100 = everything)", MCA_BASE_VAR_TYPE_INT,
         OPAL_INFO_LVL_9, &P->verbose},
        {"stats", "Print per-peer protocol statistics at finalize", MCA_BASE_VAR_TYPE_BOOL,
         OPAL_INFO_LVL_4, &P->stats},
        {"receive_budget", "Most packets one progress call handles; 1 returns to Open MPI after each packet, keeping acknowledgements off the critical path (1-65536)", MCA_BASE_VAR_TYPE_INT,
         OPAL_INFO_LVL_6, &P->receive_budget},
        {"max_frags", "Most send fragments (each one packet of btl_hpam_block_size); when all are in use, "
         "Open MPI queues further sends and the sender waits in progress (16-1048576)",
         MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &P->max_frags},
        {"defer_acks", "Launch empty acknowledgements after the next send or poll instead of at once (keeps them off the critical path)",
         MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, &P->defer_acks},
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); ++i) {
        int rc = reg(vars[i].name, vars[i].help, vars[i].type, vars[i].level, vars[i].storage);
        if (OPAL_SUCCESS != rc) return rc;
    }
    return OPAL_SUCCESS;
}

static bool bad_int(const char *name, long value, long lo, long hi)
{
    if (value >= lo && value <= hi) return false;
    opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_%s = %ld: valid range is [%ld, %ld]; "
                   "the job ends", name, value, lo, hi);
    return true;
}

static bool bad_power_of_two(const char *name, int value)
{
    if (value >= 256 && value <= 65536 && 0 == (value & (value - 1))) return false;
    opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_%s = %d: valid values are powers of "
                   "two in [256, 65536]; the job ends", name, value);
    return true;
}

static bool bad_probability(const char *name, double p)
{
    if (p >= 0.0 && p <= 1.0) return false;
    opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_%s = %g: valid range is [0, 1]; "
                   "the job ends", name, p);
    return true;
}

/* Returns OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM after naming what is wrong. */
int mca_btl_hpam_params_check(void)
{
    bool bad = false;
    if (NULL == P->nic || (0 != strcmp(P->nic, "medusa") && 0 != strcmp(P->nic, "hamlyn"))) {
        opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_nic = %s: valid values are medusa, "
                       "hamlyn; the job ends", P->nic ? P->nic : "(null)");
        bad = true;
    }
    bad |= bad_int("depth", P->depth, 1, 64);
    bad |= bad_power_of_two("block_size", P->block_size);
    bad |= bad_power_of_two("packet_size", P->packet_size);
    bad |= bad_int("rx_blocks", P->rx_blocks, 0, 1 << 20);
    const bool bad_give_up = bad_int("give_up_ms", P->give_up_ms, 1, 3600000);
    bad |= bad_give_up;
    /* The timeout must be below the give-up time (only if that one is sane). */
    bad |= bad_int("timeout_us", P->timeout_us, 1,
                   bad_give_up ? 3600000000L : (long) P->give_up_ms * 1000);
    bad |= bad_int("backoff_limit", P->backoff_limit, 0, 30);
    bad |= bad_int("checks_per_poll", P->checks_per_poll, 1, 65536);
    bad |= bad_int("fault_delay_us", P->fault_delay_us, 0, 10000000);
    bad |= bad_int("attach_timeout_ms", P->attach_timeout_ms, 1, 3600000);
    bad |= bad_int("verbose", P->verbose, 0, 100);
    bad |= bad_int("receive_budget", P->receive_budget, 1, 65536);
    bad |= bad_int("max_frags", P->max_frags, 16, 1 << 20);
    bad |= bad_probability("fault_drop", P->fault_drop);
    bad |= bad_probability("fault_duplicate", P->fault_duplicate);
    bad |= bad_probability("fault_corrupt", P->fault_corrupt);
    bad |= bad_probability("fault_reorder", P->fault_reorder);
    bad |= bad_probability("fault_delay", P->fault_delay);
    return bad ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
}

void mca_btl_hpam_params_to_config(hpam_config_t *cfg)
{
    hpam_config_init(cfg);
    cfg->nic = P->nic;
    cfg->depth = (uint32_t) P->depth;
    cfg->block_size = (uint32_t) P->block_size;
    cfg->rx_blocks = (uint32_t) P->rx_blocks;
    cfg->timeout_ns = (uint64_t) P->timeout_us * 1000;
    cfg->backoff_limit = (uint32_t) P->backoff_limit;
    cfg->give_up_ns = (uint64_t) P->give_up_ms * 1000000;
    cfg->checks_per_poll = (uint32_t) P->checks_per_poll;
    cfg->key_check = P->key_check;
    cfg->crc_check = P->crc_check;
    cfg->attach_timeout_ms = (uint64_t) P->attach_timeout_ms;
    cfg->fault_drop = P->fault_drop;
    cfg->fault_duplicate = P->fault_duplicate;
    cfg->fault_corrupt = P->fault_corrupt;
    cfg->fault_reorder = P->fault_reorder;
    cfg->fault_delay = P->fault_delay;
    cfg->fault_delay_ns = (uint64_t) P->fault_delay_us * 1000;
    cfg->fault_seed = P->fault_seed;
    cfg->poll_on_send = 0; /* the BTL polls from component progress only */
    cfg->defer_acks = P->defer_acks;
    cfg->receive_budget = (uint32_t) P->receive_budget;
    cfg->ordered = 1; /* in-order delivery per peer needs it (btl_hpam_order.c) */
}

/* True when the user set btl_hpam_<name> (not the registered default). */
static bool user_set(const char *name)
{
    const int idx = mca_base_var_find("opal", "btl", "hpam", name);
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, NULL, &source, NULL)) return false;
    return MCA_BASE_VAR_SOURCE_DEFAULT != source;
}

/* One size limit: a default above `hi` shrinks to it, a value the user set
 * above it is an error naming the parameter and its range. */
static bool fit_size(const char *name, size_t *value, size_t hi)
{
    if (*value <= hi) return false;
    if (!user_set(name)) {
        *value = hi;
        return false;
    }
    opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_%s = %zu: valid range is [1, %zu] "
                   "(the packet payload of btl_hpam_block_size = %d%s); the job ends",
                name, *value, hi, P->block_size,
                0 == strcmp(name, "max_send_size") ? "" : ", at most btl_hpam_max_send_size");
    return true;
}

int mca_btl_hpam_params_fit_sizes(mca_btl_base_module_t *m, size_t max_bulk)
{
    bool bad = false;
    if (0 == m->btl_max_send_size) m->btl_max_send_size = max_bulk; /* 0: the whole packet */
    bad |= fit_size("max_send_size", &m->btl_max_send_size, max_bulk);
    if (bad) return OPAL_ERR_BAD_PARAM;
    bad |= fit_size("eager_limit", &m->btl_eager_limit, m->btl_max_send_size);
    bad |= fit_size("rndv_eager_limit", &m->btl_rndv_eager_limit, m->btl_max_send_size);
    return bad ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
}
