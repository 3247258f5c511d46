/* Collective latency: MPI_Barrier, MPI_Allreduce of 8 bytes (one long, sum)
 * and MPI_Alltoall of 8 bytes per peer, over whatever BTL mpirun selects,
 * and, when the btl_hpam_* MPI_T performance variables exist, the protocol
 * work per operation summed over all ranks (packets, acknowledgements,
 * stalls, retransmissions): counts do not depend on how many cores the
 * ranks share, timings do.
 *   mpi_coll [--quick]
 * CSV: op,ranks,metric,value   (metric us = median over repetitions of the
 * slowest rank's time per operation; the others are counts per operation) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h" /* open_pvar */

enum coll { barrier, allreduce, alltoall, coll_count };
static const char *const coll_names[coll_count] = {"barrier", "allreduce_8", "alltoall_8"};

/* The counters read per operation, by their pvar names without btl_hpam_. */
static const char *const counter_names[] = {
    "requests_sent", "replies_sent",  "acks_sent",       "retransmissions",
    "stalls",        "busy_returns",  "timeouts",        "duplicates_reflected",
    "stale_replies", "overflow_drops", "acks_piggybacked"};
enum { ncounters = sizeof counter_names / sizeof counter_names[0], max_reps = 16 };

static int rank, size;
static long *send_buf, *recv_buf;

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void run(enum coll k, int iters)
{
    for (int i = 0; i < iters; ++i) {
        switch (k) {
        case barrier: MPI_Barrier(MPI_COMM_WORLD); break;
        case allreduce: MPI_Allreduce(send_buf, recv_buf, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); break;
        case alltoall: MPI_Alltoall(send_buf, 8, MPI_BYTE, recv_buf, 8, MPI_BYTE, MPI_COMM_WORLD); break;
        default: break;
        }
    }
}

/* Median over reps of the slowest rank's microseconds per operation. */
static double time_op(enum coll k, int iters, int reps)
{
    double v[max_reps];
    run(k, iters / 10 + 1); /* warm up */
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        run(k, iters);
        double t = (MPI_Wtime() - t0) / iters * 1e6, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        v[r] = tmax;
    }
    qsort(v, reps, sizeof v[0], cmp);
    return v[reps / 2];
}

/* The btl_hpam_* counters named above (0 handles when hpam is not loaded). */
static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[ncounters];
static int have[ncounters];

static int open_counters(void)
{
    int found = 0;
    char name[64];
    MPI_T_pvar_session_create(&session);
    for (int c = 0; c < ncounters; ++c) {
        snprintf(name, sizeof name, "btl_hpam_%s", counter_names[c]);
        have[c] = open_pvar(session, name, &handles[c]);
        found += have[c];
    }
    return found;
}

static void read_counters(unsigned long *v)
{
    for (int c = 0; c < ncounters; ++c) {
        v[c] = 0;
        if (have[c]) MPI_T_pvar_read(session, handles[c], &v[c]);
    }
}

/* Counters per operation over `iters` operations, summed over all ranks. */
static void count_op(enum coll k, int iters)
{
    unsigned long before[ncounters], after[ncounters], mine[ncounters], all[ncounters];
    MPI_Barrier(MPI_COMM_WORLD);
    read_counters(before);
    run(k, iters);
    read_counters(after);
    for (int c = 0; c < ncounters; ++c) mine[c] = after[c] - before[c];
    MPI_Reduce(mine, all, ncounters, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    const double n = iters;
    for (int c = 0; c < ncounters; ++c)
        printf("%s,%d,%s,%.3f\n", coll_names[k], size, counter_names[c], all[c] / n);
    /* packets on the wire: requests, replies, acks but those that rode on a
     * request, and the resent ones */
    printf("%s,%d,packets,%.3f\n", coll_names[k], size,
           (all[0] + all[1] + all[2] - all[10] + all[3] + all[7]) / n);
}

int main(int argc, char **argv)
{
    int provided, quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    send_buf = calloc((size_t) size, 8);
    recv_buf = calloc((size_t) size, 8);
    /* oversubscribed ranks take turns on the cores: fewer operations */
    const int iters = (quick ? 400 : 2000) / (size > 2 ? size : 1), reps = quick ? 3 : 7;
    const int counted = open_counters() > 0;
    if (rank == 0) printf("op,ranks,metric,value\n");
    for (int k = 0; k < coll_count; ++k) {
        const double us = time_op((enum coll) k, iters, reps);
        if (rank == 0) printf("%s,%d,us,%.3f\n", coll_names[k], size, us);
        if (counted) count_op((enum coll) k, iters);
        if (rank == 0) fflush(stdout);
    }
    for (int c = 0; c < ncounters; ++c)
        if (have[c]) MPI_T_pvar_handle_free(session, &handles[c]);
    MPI_T_pvar_session_free(&session);
    free(send_buf);
    free(recv_buf);
    /* MPI_T_finalize before MPI_Finalize: Debian's Open MPI 4.1.4 crashes in
     * MPI_T_finalize after MPI_Finalize (tests/mpi/mpi_pvars.c). */
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
