/* MPI ping-pong latency and streaming bandwidth between ranks 0 and 1 of
 * whatever BTL mpirun selects; prints one CSV row per size:
 *   kind,bytes,median_us_or_MBps
 * latency = half the round trip; bandwidth = a window of 64 nonblocking
 * sends, then a one-byte acknowledgement, per iteration.
 *
 * Each figure is the median of many short bursts (a burst of 100 round
 * trips of 8 bytes lasts tens of microseconds): on a 2-core machine shared
 * with other jobs, a rank is descheduled now and then, and a long
 * repetition averages that in, where a short burst either misses it or is
 * one outlier among hundreds (bench/line_floor.hpp has the measurements).
 *
 *   mpi_pingpong [--quick] [--bursts B] [--sizes a,b,c]
 *   mpi_pingpong --sizes 8 --reps R
 * --reps R: R repetitions of 5000 round trips each (500 from 64 KiB, 50
 * from 1 MiB) instead of bursts: the instruction count of an 8-byte
 * MPI_Send is the difference of callgrind totals between --reps 3 and
 * --reps 1 over 20,000 sends (bench/run's profile step). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { window = 64, max_bursts = 1001 };

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

/* iters round trips of n bytes; returns microseconds one way. */
static double pingpong(char *buf, size_t n, int iters, int rank)
{
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
    return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

/* iters windows of n-byte messages; returns MB/s (rank 0's clock: from the
 * first send to the acknowledgement of the last window). */
static double bandwidth(char *buf, size_t n, int iters, int rank)
{
    MPI_Request rq[window];
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
    return (double) n * window * iters / (MPI_Wtime() - t0) / 1e6;
}

/* Round trips per latency burst: about 100 µs of work at today's speeds. */
static int burst_iters(size_t n)
{
    const size_t k = n <= 1024 ? 100 : 100 * 1024 / n;
    return k > 0 ? (int) k : 1;
}

/* Windows per bandwidth burst (at least 256 KiB), and bursts for n: as many
 * as asked, but at most about 4 GiB in all (7 bursts at least): 64 bursts
 * of one window at 1 MiB, 16 at 4 MiB. A burst there lasts about a
 * scheduler slice, so the median needs enough of them that those another
 * process cut into stay a minority (with a 1 GiB cap, 16 at 1 MiB did not:
 * docs/decisions.md, h30m). */
static int bw_iters(size_t n) { return n >= 4096 ? 1 : (int) (4096 / n); }
static int bw_bursts(size_t n, int bursts)
{
    const double per = (double) n * window * bw_iters(n), fit = (double) (1ull << 32) / per;
    return fit >= bursts ? bursts : fit > 7 ? (int) fit : 7;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bursts = 301, reps = 0;
    size_t sizes[32] = {0, 8, 8192, 1 << 20};
    int nsizes = 4;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) bursts = 51;
        else if (!strcmp(argv[i], "--bursts") && i + 1 < argc) bursts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            nsizes = 0;
            for (char *t = strtok(argv[++i], ","); t && nsizes < 32; t = strtok(NULL, ",")) sizes[nsizes++] = strtoull(t, NULL, 10);
        }
    }
    if (reps > 0) bursts = reps;
    if (bursts < 1 || bursts > max_bursts) bursts = 301;
    size_t max = 1;
    for (int k = 0; k < nsizes; ++k) if (sizes[k] > max) max = sizes[k];
    char *buf = malloc(max);
    memset(buf, 1, max);
    static double v[max_bursts];
    if (rank == 0) printf("kind,bytes,value\n");
    for (int k = 0; k < nsizes; ++k) {
        const size_t n = sizes[k];
        const int iters = reps ? (n >= (1 << 20) ? 50 : n >= 65536 ? 500 : 5000) : burst_iters(n);
        MPI_Barrier(MPI_COMM_WORLD);
        (void) pingpong(buf, n, iters / 10 + 1, rank); /* warm up */
        for (int b = 0; b < bursts; ++b) v[b] = pingpong(buf, n, iters, rank);
        if (rank == 0) printf("latency_us,%zu,%.3f\n", n, median(v, bursts));
        if (n >= 1024) {
            const int nb = bw_bursts(n, bursts);
            MPI_Barrier(MPI_COMM_WORLD);
            (void) bandwidth(buf, n, 1, rank);
            for (int b = 0; b < nb; ++b) v[b] = bandwidth(buf, n, bw_iters(n), rank);
            if (rank == 0) printf("bandwidth_MBps,%zu,%.1f\n", n, median(v, nb));
        }
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
