/*
 * MCA parameters of btl/hpam: every knob of the table in hpam_knobs.h, with
 * its help, default and range from there, plus verbose and stats. A bad value
 * is reported with the parameter's full name and its valid range, and the
 * component then ends the whole job through the runtime
 * (btl_hpam_component.c), even when tcp could carry on.
 */
#include "btl_hpam.h"

#include <stdio.h>
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

/* Knobs whose default the BTL sets apart from the table's (the native API
 * and the UCX transport keep the table's), with what the help adds.
 * depth: an MPI stream keeps many messages in flight to one peer, and D is
 * the window of them that may be unacknowledged; this is its most, and
 * unless the user sets it, mca_btl_hpam_params_fit_depth lowers it to what
 * fits the card budget. block_size: MPI messages up to a block's payload go
 * eager (one copy in, one out), larger ones rendezvous (a control message
 * each way and a deposit); 32 KiB blocks take 4-16 KiB messages eager,
 * where the rendezvous cost 3.5-5 us more. Measured in
 * docs/decisions.md. */
static const struct {
    const char *name;
    long value;
    const char *note;
} btl_defaults[] = {
    {"depth", 64,
     "; BTL default: the largest power of two up to 64 (at least 4) whose card blocks, "
     "2*(P-1)*(2D+1) of btl_hpam_block_size bytes, fit btl_hpam_card_budget_mb per process "
     "(P = ranks on the node; 32 MiB of 32 KiB blocks: 64 up to 4 ranks, 32 up to 8, 16 up to 16, "
     "8 up to 32)"},
    {"block_size", MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE,
     "; BTL default: 32768, so MPI messages up to 32 KiB less the headers go eager"},
};

static int btl_default_row(size_t i)
{
    for (size_t k = 0; k < sizeof btl_defaults / sizeof btl_defaults[0]; ++k) {
        if (0 == strcmp(hpam_knob_info(i)->name, btl_defaults[k].name)) return (int) k;
    }
    return -1;
}

static hpam_knob_value_t btl_default(size_t i)
{
    hpam_knob_value_t d = hpam_knob_default(i);
    const int row = btl_default_row(i);
    if (row >= 0) d.i = btl_defaults[row].value;
    return d;
}

/* Knob i's default into its storage; returns the MCA type it registers as. */
static mca_base_var_type_t knob_storage(size_t i, mca_btl_hpam_knob_storage_t *s)
{
    const hpam_knob_value_t d = btl_default(i);
    switch (hpam_knob_info(i)->type) {
    case HPAM_KNOB_BOOL: s->flag = 0 != d.i; return MCA_BASE_VAR_TYPE_BOOL;
    case HPAM_KNOB_REAL: s->real = d.r; return MCA_BASE_VAR_TYPE_DOUBLE;
    case HPAM_KNOB_CHOICE: s->word = (char *) d.s; return MCA_BASE_VAR_TYPE_STRING;
    default: s->whole = (long) d.i; return MCA_BASE_VAR_TYPE_LONG;
    }
}

/* The knob's help with its range and unit, as ompi_info shows it. */
static void knob_help(const hpam_knob_info_t *k, char *out, size_t len)
{
    const char *sep = *k->unit ? " " : "";
    switch (k->type) {
    case HPAM_KNOB_BOOL: snprintf(out, len, "%s", k->help); break;
    case HPAM_KNOB_REAL: snprintf(out, len, "%s (%g-%g)", k->help, k->real_min, k->real_max); break;
    case HPAM_KNOB_CHOICE: snprintf(out, len, "%s (%s)", k->help, k->choices); break;
    case HPAM_KNOB_POWER2:
        snprintf(out, len, "%s (power of two, %lld-%lld%s%s)", k->help, (long long) k->min,
                 (long long) k->max, sep, k->unit);
        break;
    default:
        snprintf(out, len, "%s (%lld-%lld%s%s)", k->help, (long long) k->min, (long long) k->max,
                 sep, k->unit);
    }
}

/* Every knob of the table as btl_hpam_<name>, then the BTL's own four. */
int mca_btl_hpam_params_register(void)
{
    const size_t n = hpam_knob_count();
    if (n > MCA_BTL_HPAM_MAX_KNOBS) return OPAL_ERR_NOT_SUPPORTED;
    for (size_t i = 0; i < n; ++i) {
        const hpam_knob_info_t *k = hpam_knob_info(i);
        char help[768];
        knob_help(k, help, sizeof help);
        const int row = btl_default_row(i);
        if (row >= 0) strncat(help, btl_defaults[row].note, sizeof help - strlen(help) - 1);
        const mca_base_var_type_t type = knob_storage(i, &P->knob[i]);
        int rc = reg(k->name, help, type, OPAL_INFO_LVL_1 + k->level - 1, &P->knob[i]);
        if (OPAL_SUCCESS != rc) return rc;
    }
    P->verbose = 0;
    P->stats = false;
    P->max_frags = 512;
    P->card_budget_mb = 32;
    int rc = reg("verbose", "Verbosity of btl/hpam (0 = errors only, 100 = everything)",
                 MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, &P->verbose);
    if (OPAL_SUCCESS != rc) return rc;
    rc = reg("card_budget_mb", "Card memory per process (MiB) within which the default depth "
             "stays: D is halved from 64 (not below 4) until the card's 2*(P-1)*(2D+1) blocks fit; "
             "unused when btl_hpam_depth is set (1-65536)",
             MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &P->card_budget_mb);
    if (OPAL_SUCCESS != rc) return rc;
    rc = reg("max_frags", "Most send fragments (one packet each); when all are in use, Open MPI "
             "queues further sends and the sender waits in progress (16-1048576)",
             MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, &P->max_frags);
    if (OPAL_SUCCESS != rc) return rc;
    return reg("stats", "Print per-peer protocol statistics at finalize", MCA_BASE_VAR_TYPE_BOOL,
               OPAL_INFO_LVL_4, &P->stats);
}

static hpam_knob_value_t knob_value(size_t i)
{
    const mca_btl_hpam_knob_storage_t *s = &P->knob[i];
    hpam_knob_value_t v;
    switch (hpam_knob_info(i)->type) {
    case HPAM_KNOB_BOOL: v.i = s->flag; break;
    case HPAM_KNOB_REAL: v.r = s->real; break;
    case HPAM_KNOB_CHOICE: v.s = s->word; break;
    default: v.i = s->whole;
    }
    return v;
}

/* Every knob checked by the table in table order (a knob whose rule involves
 * another is checked against that one's value once accepted) and stored in
 * the two configurations. Returns OPAL_SUCCESS, or OPAL_ERR_BAD_PARAM after
 * naming each bad parameter with its valid range. */
int mca_btl_hpam_params_check(void)
{
    bool bad = false;
    hpam_config_init(&P->am);
    hpam_dep_config_init(&P->dep);
    for (size_t i = 0; i < hpam_knob_count(); ++i) {
        const hpam_knob_value_t v = knob_value(i);
        char msg[256];
        if (HPAM_OK == hpam_knob_check(i, v, &P->am, &P->dep, HPAM_KNOB_STYLE_MCA, msg, sizeof msg)) {
            hpam_knob_set(&P->am, &P->dep, i, v);
            continue;
        }
        opal_output(0, "btl/hpam: %s; the job ends", msg);
        bad = true;
    }
    if (P->verbose < 0 || P->verbose > 100) {
        opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_verbose = %d: valid range is "
                       "[0, 100]; the job ends", P->verbose);
        bad = true;
    }
    if (P->card_budget_mb < 1 || P->card_budget_mb > 65536) {
        opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_card_budget_mb = %d: valid range "
                       "is [1, 65536]; the job ends", P->card_budget_mb);
        bad = true;
    }
    if (P->max_frags < 16 || P->max_frags > (1 << 20)) {
        opal_output(0, "btl/hpam: invalid MCA parameter btl_hpam_max_frags = %d: valid range is "
                       "[16, 1048576]; the job ends", P->max_frags);
        bad = true;
    }
    P->am.poll_on_send = 0; /* the BTL polls from component progress only */
    P->am.ordered = 1;      /* in-order delivery per peer needs it (btl_hpam_order.c) */
    return bad ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
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
                name, *value, hi, (int) P->am.block_size,
                0 == strcmp(name, "max_send_size") ? "" : ", at most btl_hpam_max_send_size");
    return true;
}

void mca_btl_hpam_params_fit_depth(int nlocal)
{
    if (user_set("depth")) return;
    const uint64_t peers = nlocal > 1 ? (uint64_t) (nlocal - 1) : 1;
    uint32_t d = P->am.depth;
    const uint64_t budget = (uint64_t) P->card_budget_mb << 20;
    while (d > 4 && 2 * peers * (2 * (uint64_t) d + 1) * P->am.block_size > budget) d /= 2;
    P->am.depth = d;
}

/* The sizes follow the card's block unless the user set them: a message
 * whose fragment fits one packet goes eager (one copy into the block and one
 * out of it beats a rendezvous's two control messages and a deposit). */
int mca_btl_hpam_params_fit_sizes(mca_btl_base_module_t *m, size_t max_bulk)
{
    bool bad = false;
    /* 0: the whole packet */
    if (0 == m->btl_max_send_size || !user_set("max_send_size")) m->btl_max_send_size = max_bulk;
    bad |= fit_size("max_send_size", &m->btl_max_send_size, max_bulk);
    if (bad) return OPAL_ERR_BAD_PARAM;
    if (!user_set("eager_limit")) m->btl_eager_limit = m->btl_max_send_size;
    if (!user_set("rndv_eager_limit")) m->btl_rndv_eager_limit = m->btl_max_send_size;
    bad |= fit_size("eager_limit", &m->btl_eager_limit, m->btl_max_send_size);
    bad |= fit_size("rndv_eager_limit", &m->btl_rndv_eager_limit, m->btl_max_send_size);
    return bad ? OPAL_ERR_BAD_PARAM : OPAL_SUCCESS;
}
