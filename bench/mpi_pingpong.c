/* MPI ping-pong latency and streaming bandwidth between ranks 0 and 1 of
 * whatever BTL mpirun selects; prints one CSV row per size:
 *   kind,bytes,median_us_or_MBps
 * latency = half the round trip (median of --reps repetitions of N round
 * trips); bandwidth = a window of 64 nonblocking sends per iteration.
 *   mpi_pingpong [--quick] [--reps R] [--sizes a,b,c] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

static double pingpong(char *buf, size_t n, int iters, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        if (rank == 0) {
            MPI_Send(buf, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int) n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int) n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2 * 1e6; /* one-way, microseconds */
}

static double bandwidth(char *buf, size_t n, int iters, int rank)
{
    enum { window = 64 };
    MPI_Request rq[window];
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        for (int w = 0; w < window; ++w) {
            if (rank == 0) MPI_Isend(buf, (int) n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[w]);
            else if (rank == 1) MPI_Irecv(buf, (int) n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
        }
        if (rank < 2) MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
        char ack;
        if (rank == 0) MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 1) MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
    const double secs = MPI_Wtime() - t0;
    return (double) n * window * iters / secs / 1e6; /* MB/s */
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = 7, quick = 0;
    size_t sizes[32] = {0, 8, 8192, 1 << 20};
    int nsizes = 4;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) { quick = 1; reps = 3; }
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *t = strtok(argv[++i], ","); t && nsizes < 32; t = strtok(NULL, ",")) sizes[nsizes++] = strtoull(t, NULL, 10);
        }
    }
    if (reps < 1 || reps > 99) reps = 7;
    size_t max = 1;
    for (int k = 0; k < nsizes; ++k) if (sizes[k] > max) max = sizes[k];
    char *buf = malloc(max);
    memset(buf, 1, max);
    double v[99];
    if (rank == 0) printf("kind,bytes,value\n");
    for (int k = 0; k < nsizes; ++k) {
        const size_t n = sizes[k];
        int iters = n >= (1 << 20) ? 50 : n >= 65536 ? 500 : 5000;
        if (quick) iters /= 5;
        (void) pingpong(buf, n, iters / 10 + 1, rank); /* warm up */
        for (int r = 0; r < reps; ++r) v[r] = pingpong(buf, n, iters, rank);
        if (rank == 0) printf("latency_us,%zu,%.3f\n", n, median(v, reps));
        if (n >= 1024) {
            const int bw_iters = n >= (1 << 20) ? (quick ? 2 : 5) : (quick ? 10 : 50);
            (void) bandwidth(buf, n, 1, rank);
            for (int r = 0; r < reps; ++r) v[r] = bandwidth(buf, n, bw_iters, rank);
            if (rank == 0) printf("bandwidth_MBps,%zu,%.1f\n", n, median(v, reps));
        }
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
