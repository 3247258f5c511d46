/*
 * The BTL's parameters described once (btl_hpam_param_info.h): read by the
 * plugin's registration and check (btl_hpam_params.c) and by the generator
 * of the README's parameter table (btl_hpam_param_table.c).
 */
#include "btl_hpam_param_info.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define OWN(id, nm, hlp, unt, typ, lvl, lo, hi, dflt)                                              \
    [id] = {.info = {.name = nm,                                                                   \
                     .field = nm,                                                                  \
                     .help = hlp,                                                                  \
                     .unit = unt,                                                                  \
                     .type = typ,                                                                  \
                     .level = lvl,                                                                 \
                     .min = lo,                                                                    \
                     .max = hi},                                                                   \
            .value = dflt}

const mca_btl_hpam_own_param_t mca_btl_hpam_own_params[MCA_BTL_HPAM_OWN_PARAMS] = {
    OWN(MCA_BTL_HPAM_VERBOSE, "verbose", "Verbosity of btl/hpam, from errors only to everything",
        "", HPAM_KNOB_UNSIGNED, 9, 0, 100, 0),
    OWN(MCA_BTL_HPAM_CARD_BUDGET_MB, "card_budget_mb",
        "Card memory per process within which the BTL's default depth stays (see "
        "btl_hpam_depth); unused when btl_hpam_depth is set",
        "MiB", HPAM_KNOB_UNSIGNED, 5, 1, 65536, 32),
    OWN(MCA_BTL_HPAM_MAX_FRAGS, "max_frags",
        "Most send fragments (one packet each); when all are in use, Open MPI queues further "
        "sends and the sender waits in progress",
        "", HPAM_KNOB_UNSIGNED, 5, 16, 1 << 20, 512),
    OWN(MCA_BTL_HPAM_STATS, "stats", "Print per-peer protocol statistics at finalize", "",
        HPAM_KNOB_BOOL, 4, 0, 1, 0),
};

static bool is_knob(size_t i, const char *name)
{
    return 0 == strcmp(hpam_knob_info(i)->name, name);
}

/* The two knobs whose default the BTL sets apart from the table's (the
 * native API and the UCX transport keep the table's). depth: an MPI stream
 * keeps many messages in flight to one peer, and D is the window of them
 * that may be unacknowledged; the BTL's is the most the protocol takes, and
 * unless the user sets it, mca_btl_hpam_params_fit_depth lowers it to what
 * fits the card budget. block_size: MPI messages up to a block's payload go
 * eager (one copy in, one out), larger ones rendezvous (a control message
 * each way and a deposit); 32 KiB blocks take 4-16 KiB messages eager,
 * where the rendezvous cost 3.5-5 us more. Measured in docs/decisions.md. */
hpam_knob_value_t mca_btl_hpam_knob_default(size_t i)
{
    hpam_knob_value_t d = hpam_knob_default(i);
    if (is_knob(i, "depth")) d.i = hpam_knob_info(i)->max;
    if (is_knob(i, "block_size")) d.i = MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE;
    if (is_knob(i, "receive_budget")) d.i = MCA_BTL_HPAM_DEFAULT_RECEIVE_BUDGET;
    return d;
}

uint32_t mca_btl_hpam_depth_floor(void)
{
    return (uint32_t)hpam_knob_default((size_t)hpam_knob_find("depth")).i;
}

uint32_t mca_btl_hpam_fit_depth(uint32_t start, uint32_t floor, int nlocal, uint32_t block_size,
                                long budget_mb)
{
    const uint64_t peers = nlocal > 1 ? (uint64_t)(nlocal - 1) : 1;
    const uint64_t budget = (uint64_t)budget_mb << 20;
    uint32_t d = start;
    while (d > floor && 2 * peers * (2 * (uint64_t)d + 1) * block_size > budget) d /= 2;
    return d;
}

/* The BTL's default depth at `ranks` ranks with the default block. */
static uint32_t depth_at(int ranks, uint32_t start, uint32_t floor, long budget)
{
    return mca_btl_hpam_fit_depth(start, floor, ranks, MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE, budget);
}

/* The BTL's default depth for each count of ranks, with the default block
 * and budget: "64 up to 4 ranks, 32 up to 8, ...". Every process builds
 * this help at registration, so the counts where the depth changes (it
 * only falls as ranks are added) are found by bisection, not by trying
 * every count up to 65536. */
static void depth_examples(char *out, size_t len)
{
    const uint32_t start = (uint32_t)mca_btl_hpam_knob_default((size_t)hpam_knob_find("depth")).i;
    const uint32_t floor = mca_btl_hpam_depth_floor();
    const long budget = mca_btl_hpam_own_params[MCA_BTL_HPAM_CARD_BUDGET_MB].value;
    const int most = 65536;
    size_t n = 0;
    int p = 2;
    uint32_t d = depth_at(p, start, floor, budget);
    while (n < len && depth_at(most, start, floor, budget) != d) {
        int lo = p, hi = most; /* the depth is d at lo, another at hi */
        while (hi - lo > 1) {
            const int mid = lo + (hi - lo) / 2;
            if (depth_at(mid, start, floor, budget) == d)
                lo = mid;
            else
                hi = mid;
        }
        n += (size_t)snprintf(out + n, len - n, "%s%u up to %d%s", n ? ", " : "", d, lo,
                              n ? "" : " ranks");
        p = hi;
        d = depth_at(p, start, floor, budget);
    }
    if (n < len) snprintf(out + n, len - n, ", %u beyond", d);
}

/* Why the BTL sets knob i's default apart, or "". */
static void btl_default_note(size_t i, char *out, size_t len)
{
    *out = '\0';
    if (is_knob(i, "depth")) {
        char examples[160];
        depth_examples(examples, sizeof examples);
        snprintf(out, len,
                 "; BTL default: the largest power of two up to %lld (at least %lld) whose card "
                 "blocks, 2*(P-1)*(2D+1) of btl_hpam_block_size bytes, fit btl_hpam_card_budget_mb "
                 "per process (P = ranks on the node; %ld MiB of %d-byte blocks: %s)",
                 (long long)mca_btl_hpam_knob_default(i).i, (long long)hpam_knob_default(i).i,
                 mca_btl_hpam_own_params[MCA_BTL_HPAM_CARD_BUDGET_MB].value,
                 MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE, examples);
    } else if (is_knob(i, "block_size")) {
        snprintf(out, len,
                 "; BTL default: %d, so MPI messages up to %d bytes (the block less %d bytes of "
                 "headers) go eager",
                 MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE,
                 MCA_BTL_HPAM_DEFAULT_BLOCK_SIZE - HPAM_PACKET_HEADER_BYTES,
                 HPAM_PACKET_HEADER_BYTES);
    } else if (is_knob(i, "receive_budget")) {
        snprintf(out, len,
                 "; BTL default: %d, a stream's whole window in one poll (8-byte message rate "
                 "+10-15%% over 1; a lone message is still taken alone)",
                 MCA_BTL_HPAM_DEFAULT_RECEIVE_BUDGET);
    }
}

void mca_btl_hpam_param_help(const hpam_knob_info_t *k, int knob, char *out, size_t len)
{
    const char *sep = *k->unit ? " " : "";
    int n;
    switch (k->type) {
    case HPAM_KNOB_BOOL: n = snprintf(out, len, "%s", k->help); break;
    case HPAM_KNOB_REAL:
        n = snprintf(out, len, "%s (%g-%g)", k->help, k->real_min, k->real_max);
        break;
    case HPAM_KNOB_CHOICE: n = snprintf(out, len, "%s (%s)", k->help, k->choices); break;
    case HPAM_KNOB_POWER2:
        n = snprintf(out, len, "%s (power of two, %lld-%lld%s%s)", k->help, (long long)k->min,
                     (long long)k->max, sep, k->unit);
        break;
    default:
        n = snprintf(out, len, "%s (%lld-%lld%s%s)", k->help, (long long)k->min, (long long)k->max,
                     sep, k->unit);
    }
    if (knob >= 0 && n >= 0 && (size_t)n < len)
        btl_default_note((size_t)knob, out + n, len - (size_t)n);
}
