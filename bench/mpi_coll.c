/* Collective latency: MPI_Barrier, MPI_Allreduce of 8 bytes (one long, sum)
 * and MPI_Alltoall of 8 bytes per peer, over whatever BTL mpirun selects,
 * and, when the btl_hpam_* MPI_T performance variables exist, the protocol
 * work per operation summed over all ranks (packets, acknowledgements,
 * stalls, retransmissions): counts do not depend on how many cores the
 * ranks share, timings do.
 *   mpi_coll [--quick]
 * CSV: op,ranks,metric,value   (metric us = median over short bursts of the
 * slowest rank's time per operation (bench/mpi_pingpong.c says why short);
 * the others are counts per operation, over a longer loop) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_pvars.h"

enum coll { barrier, allreduce, alltoall, coll_count };
static const char *const coll_names[coll_count] = {"barrier", "allreduce_8", "alltoall_8"};
enum { max_reps = 1001 };

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
    static double v[max_reps];
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

static struct hpam_pvars counters;

/* Counters per operation over `iters` operations, summed over all ranks. */
static void count_op(enum coll k, int iters)
{
    unsigned long before[hpam_npvars], after[hpam_npvars], all[hpam_npvars];
    MPI_Barrier(MPI_COMM_WORLD);
    hpam_pvars_read(&counters, before);
    run(k, iters);
    hpam_pvars_read(&counters, after);
    hpam_pvars_sum(before, after, all);
    if (rank != 0) return;
    const double n = iters;
    for (int c = 0; c < hpam_npvars; ++c)
        printf("%s,%d,%s,%.3f\n", coll_names[k], size, hpam_pvar_names[c], all[c] / n);
    printf("%s,%d,packets,%.3f\n", coll_names[k], size, hpam_packets(all) / n);
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
    /* bursts of about 100 µs over 2 ranks; oversubscribed ranks take turns
     * on the cores: fewer operations per burst */
    const int iters = 200 / size, reps = quick ? 21 : 101;
    const int counted_iters = (quick ? 400 : 2000) / (size > 2 ? size : 1);
    const int counted = hpam_pvars_open(&counters) > 0;
    if (rank == 0) printf("op,ranks,metric,value\n");
    for (int k = 0; k < coll_count; ++k) {
        const double us = time_op((enum coll) k, iters, reps);
        if (rank == 0) printf("%s,%d,us,%.3f\n", coll_names[k], size, us);
        if (counted) count_op((enum coll) k, counted_iters);
        if (rank == 0) fflush(stdout);
    }
    hpam_pvars_close(&counters);
    free(send_buf);
    free(recv_buf);
    /* MPI_T_finalize before MPI_Finalize: Debian's Open MPI 4.1.4 crashes in
     * MPI_T_finalize after MPI_Finalize (tests/mpi/mpi_pvars.c). */
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
