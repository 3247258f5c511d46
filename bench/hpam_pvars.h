/* hpam's protocol counters as MPI_T performance variables (btl_hpam_*),
 * read by the MPI benchmarks to report the protocol's work per operation
 * or per message: counts do not depend on how many cores the ranks share,
 * timings do. Over another BTL the variables do not exist and every
 * count reads 0 (hpam_pvars_open returns 0). Needs MPI_T_init_thread
 * before MPI_Init, and MPI_T_finalize before MPI_Finalize (Debian's Open
 * MPI 4.1.4 crashes in MPI_T_finalize after MPI_Finalize). */
#ifndef HPAM_BENCH_PVARS_H
#define HPAM_BENCH_PVARS_H

#include <mpi.h>
#include <stdio.h>

#include "mpi_check.h" /* open_pvar */

/* The counters, by their pvar names without btl_hpam_. */
static const char *const hpam_pvar_names[] = {
    "requests_sent", "replies_sent",  "acks_sent",       "retransmissions",
    "stalls",        "busy_returns",  "timeouts",        "duplicates_reflected",
    "stale_replies", "overflow_drops", "acks_piggybacked", "early_resends",
    "spurious_resends", "resends_deferred", "acks_combined"};
enum { hpam_npvars = sizeof hpam_pvar_names / sizeof hpam_pvar_names[0] };

struct hpam_pvars {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handles[hpam_npvars];
    int have[hpam_npvars];
};

/* Opens the counters that exist; returns how many. */
static inline int hpam_pvars_open(struct hpam_pvars *p)
{
    int found = 0;
    char name[64];
    MPI_T_pvar_session_create(&p->session);
    for (int c = 0; c < hpam_npvars; ++c) {
        snprintf(name, sizeof name, "btl_hpam_%s", hpam_pvar_names[c]);
        p->have[c] = open_pvar(p->session, name, &p->handles[c]);
        found += p->have[c];
    }
    return found;
}

static inline void hpam_pvars_read(struct hpam_pvars *p, unsigned long *v)
{
    for (int c = 0; c < hpam_npvars; ++c) {
        v[c] = 0;
        if (p->have[c]) MPI_T_pvar_read(p->session, p->handles[c], &v[c]);
    }
}

static inline void hpam_pvars_close(struct hpam_pvars *p)
{
    for (int c = 0; c < hpam_npvars; ++c)
        if (p->have[c]) MPI_T_pvar_handle_free(p->session, &p->handles[c]);
    MPI_T_pvar_session_free(&p->session);
}

/* Counts between two readings summed over all ranks (valid on rank 0). */
static inline void hpam_pvars_sum(const unsigned long *before, const unsigned long *after, unsigned long *all)
{
    unsigned long mine[hpam_npvars];
    for (int c = 0; c < hpam_npvars; ++c) mine[c] = after[c] - before[c];
    MPI_Reduce(mine, all, hpam_npvars, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
}

/* Packets on the wire: requests, replies, acks but those that rode on a
 * request or went inside another ack packet (multi_ack), and the resent
 * and reflected ones. */
static inline unsigned long hpam_packets(const unsigned long *all)
{
    return all[0] + all[1] + all[2] - all[10] - all[14] + all[3] + all[7];
}

#endif
