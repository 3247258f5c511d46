/*
 * MCA parameters of btl/hpam: every knob of the table in hpam_knobs.h, with
 * its help, default and range from there, plus the BTL's own four, each
 * described once in btl_hpam_param_info.c (which the README's parameter
 * table is generated from). A bad value
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
    int rc =
        mca_base_component_var_register(&mca_btl_hpam_component.super.btl_version, name, help, type,
                                        NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY, storage);
    return rc < 0 ? rc : OPAL_SUCCESS;
}

/* Knob i's default (the BTL's) into its storage; returns the MCA type it
 * registers as. */
static mca_base_var_type_t knob_storage(size_t i, mca_btl_hpam_knob_storage_t *s)
{
    const hpam_knob_value_t d = mca_btl_hpam_knob_default(i);
    switch (hpam_knob_info(i)->type) {
    case HPAM_KNOB_BOOL: s->flag = 0 != d.i; return MCA_BASE_VAR_TYPE_BOOL;
    case HPAM_KNOB_REAL: s->real = d.r; return MCA_BASE_VAR_TYPE_DOUBLE;
    case HPAM_KNOB_CHOICE: s->word = (char *)d.s; return MCA_BASE_VAR_TYPE_STRING;
    default: s->whole = (long)d.i; return MCA_BASE_VAR_TYPE_LONG;
    }
}

/* Where own parameter j (btl_hpam_param_info.h) lives: an int, or a bool. */
static void *own_storage(int j)
{
    switch (j) {
    case MCA_BTL_HPAM_VERBOSE: return &P->verbose;
    case MCA_BTL_HPAM_CARD_BUDGET_MB: return &P->card_budget_mb;
    case MCA_BTL_HPAM_MAX_FRAGS: return &P->max_frags;
    default: return &P->stats;
    }
}

/* Own parameter j's default into its storage; returns its MCA type. */
static mca_base_var_type_t own_default(int j)
{
    const mca_btl_hpam_own_param_t *o = &mca_btl_hpam_own_params[j];
    if (HPAM_KNOB_BOOL == o->info.type) {
        *(bool *)own_storage(j) = 0 != o->value;
        return MCA_BASE_VAR_TYPE_BOOL;
    }
    *(int *)own_storage(j) = (int)o->value;
    return MCA_BASE_VAR_TYPE_INT;
}

/* Every knob of the table as btl_hpam_<name>, then the BTL's own four; the
 * help of each as btl_hpam_param_info.c writes it (with its range). */
int mca_btl_hpam_params_register(void)
{
    const size_t n = hpam_knob_count();
    if (n > MCA_BTL_HPAM_MAX_KNOBS) return OPAL_ERR_NOT_SUPPORTED;
    char help[1024];
    for (size_t i = 0; i < n; ++i) {
        const hpam_knob_info_t *k = hpam_knob_info(i);
        mca_btl_hpam_param_help(k, (int)i, help, sizeof help);
        const mca_base_var_type_t type = knob_storage(i, &P->knob[i]);
        int rc = reg(k->name, help, type, OPAL_INFO_LVL_1 + k->level - 1, &P->knob[i]);
        if (OPAL_SUCCESS != rc) return rc;
    }
    for (int j = 0; j < MCA_BTL_HPAM_OWN_PARAMS; ++j) {
        const hpam_knob_info_t *k = &mca_btl_hpam_own_params[j].info;
        mca_btl_hpam_param_help(k, -1, help, sizeof help);
        const mca_base_var_type_t type = own_default(j);
        int rc = reg(k->name, help, type, OPAL_INFO_LVL_1 + k->level - 1, own_storage(j));
        if (OPAL_SUCCESS != rc) return rc;
    }
    return OPAL_SUCCESS;
}

/* The BTL's own parameters within their ranges; false after naming each
 * that is not. */
static bool own_params_valid(void)
{
    bool ok = true;
    for (int j = 0; j < MCA_BTL_HPAM_OWN_PARAMS; ++j) {
        const hpam_knob_info_t *k = &mca_btl_hpam_own_params[j].info;
        if (HPAM_KNOB_BOOL == k->type) continue;
        const int v = *(const int *)own_storage(j);
        if (v >= k->min && v <= k->max) continue;
        opal_output(0,
                    "btl/hpam: invalid MCA parameter btl_hpam_%s = %d: valid range is "
                    "[%lld, %lld]; the job ends",
                    k->name, v, (long long)k->min, (long long)k->max);
        ok = false;
    }
    return ok;
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
        if (HPAM_OK ==
            hpam_knob_check(i, v, &P->am, &P->dep, HPAM_KNOB_STYLE_MCA, msg, sizeof msg)) {
            hpam_knob_set(&P->am, &P->dep, i, v);
            continue;
        }
        opal_output(0, "btl/hpam: %s; the job ends", msg);
        bad = true;
    }
    if (!own_params_valid()) bad = true;
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
    opal_output(0,
                "btl/hpam: invalid MCA parameter btl_hpam_%s = %zu: valid range is [1, %zu] "
                "(the packet payload of btl_hpam_block_size = %d%s); the job ends",
                name, *value, hi, (int)P->am.block_size,
                0 == strcmp(name, "max_send_size") ? "" : ", at most btl_hpam_max_send_size");
    return true;
}

void mca_btl_hpam_params_fit_depth(int nlocal)
{
    if (user_set("depth")) return;
    P->am.depth = mca_btl_hpam_fit_depth(P->am.depth, mca_btl_hpam_depth_floor(), nlocal,
                                         P->am.block_size, P->card_budget_mb);
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
