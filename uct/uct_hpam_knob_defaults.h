/*
 * The knobs whose default the UCX transport sets apart from the knob
 * table's (the BTL sets its own, btl_hpam_param_info.c). UCX streams
 * active messages (its rendezvous, tag matching and ucx_perftest's am_bw
 * keep many in flight to one peer) and calls progress in a loop: D is the
 * window of unanswered messages per peer (the table's D = 4, Medusa's,
 * held a stream to four messages per acknowledgement round trip), and a
 * poll that hands back after one packet pays the whole progress call (the
 * memory domain's card, the deposits in flight) per message.
 * docs/decisions.md, issue 26: am_bw short 8 B over Hamlyn 0.44-0.59 ->
 * 0.30-0.37 us (posix 0.16). Only the knob table's header is needed, so
 * the README's parameter table (btl_hpam_param_table.c) shows them too.
 */
#ifndef UCT_HPAM_KNOB_DEFAULTS_H
#define UCT_HPAM_KNOB_DEFAULTS_H

#include <string.h>

#include "hpam_knobs.h"

#define UCT_HPAM_DEFAULT_DEPTH 16
#define UCT_HPAM_DEFAULT_RECEIVE_BUDGET 16

/* Knob i's default in the UCX transport. */
static inline hpam_knob_value_t uct_hpam_knob_default(size_t i)
{
    hpam_knob_value_t d = hpam_knob_default(i);
    if (0 == strcmp(hpam_knob_info(i)->name, "depth")) d.i = UCT_HPAM_DEFAULT_DEPTH;
    if (0 == strcmp(hpam_knob_info(i)->name, "receive_budget")) {
        d.i = UCT_HPAM_DEFAULT_RECEIVE_BUDGET;
    }
    return d;
}

#endif
