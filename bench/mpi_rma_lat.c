/* MPI RMA latency on an MPI_Win_create window (the kind osc/rdma places on
 * the BTL): MPI_Put, MPI_Get (8 B and 4 KiB), MPI_Fetch_and_op and
 * MPI_Compare_and_swap, each completed by MPI_Win_flush, rank 0 to rank 1
 * under MPI_Win_lock_all. --ops names a subset (comma-separated: put, get,
 * fetch_and_op, compare_and_swap), so that a transport whose one-sided
 * component fails one operation can run it under another component.
 *   mpi_rma_lat [--quick] [--ops a,b]
 * Each figure is the median of many short bursts of 100 operations (see
 * bench/mpi_pingpong.c for why).
 * CSV: op,bytes,median_us */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { put, get, fetch_and_op, compare_and_swap, op_count };
static const char *const op_names[op_count] = {"put", "get", "fetch_and_op", "compare_and_swap"};

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* One operation of `bytes` to rank 1, then the flush that completes it. */
static void one(enum op k, int bytes, char *local, MPI_Win win, long i)
{
    long inc = 1, old, expect = i, value = i + 1;
    switch (k) {
    case put: MPI_Put(local, bytes, MPI_BYTE, 1, 64, bytes, MPI_BYTE, win); break;
    case get: MPI_Get(local, bytes, MPI_BYTE, 1, 64, bytes, MPI_BYTE, win); break;
    case fetch_and_op: MPI_Fetch_and_op(&inc, &old, MPI_LONG, 1, 0, MPI_SUM, win); break;
    case compare_and_swap:
        MPI_Compare_and_swap(&value, &expect, &old, MPI_LONG, 1, 8, win);
        break;
    default: break;
    }
    MPI_Win_flush(1, win);
}

/* Median over reps of microseconds per operation + flush. */
static double measure(enum op k, int bytes, char *local, MPI_Win win, int iters, int reps, int rank)
{
    static double v[1001];
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (rank == 0)
            for (int i = 0; i < iters; ++i) one(k, bytes, local, win, (long) r * iters + i);
        v[r] = (MPI_Wtime() - t0) / iters * 1e6;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    qsort(v, reps, sizeof v[0], cmp);
    return v[reps / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, quick = 0, wanted[op_count] = {1, 1, 1, 1};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            memset(wanted, 0, sizeof wanted);
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ","))
                for (int k = 0; k < op_count; ++k) wanted[k] |= !strcmp(t, op_names[k]);
        }
    }
    enum { winbytes = 1 << 16 };
    char *base = calloc(1, winbytes), *local = calloc(1, winbytes);
    MPI_Win win;
    MPI_Win_create(base, winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    const int iters = 100, reps = quick ? 21 : 201;
    static const struct { enum op k; int bytes; } runs[] = {
        {put, 8}, {get, 8}, {put, 4096}, {get, 4096}, {fetch_and_op, 8}, {compare_and_swap, 8}};
    if (rank == 0) printf("op,bytes,value\n");
    for (size_t j = 0; j < sizeof runs / sizeof runs[0]; ++j) {
        if (!wanted[runs[j].k]) continue;
        const double us = measure(runs[j].k, runs[j].bytes, local, win, iters, reps, rank);
        if (rank == 0) printf("%s,%d,%.3f\n", op_names[runs[j].k], runs[j].bytes, us);
        fflush(stdout);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(base);
    free(local);
    MPI_Finalize();
    return 0;
}
