/* Message rate with several messages in flight: ranks are paired (0-1,
 * 2-3, ...); each sender posts a window of 64 nonblocking sends, the
 * receiver 64 receives, then a zero-byte ack; the aggregate rate over all
 * pairs is the median of many short bursts of such windows (a rank that is
 * descheduled for a while spoils one burst, not the figure: see
 * bench/mpi_pingpong.c). With --sizes, the same stream is
 * repeated for each size and reported as bandwidth (MB/s), which gives the
 * small-message half of the bandwidth curve (N½ lies there). Over hpam, the
 * protocol's work per 8-byte message follows the rate (count_* rows:
 * packets, acknowledgements, stalls, timeouts, retransmissions, ... summed
 * over all ranks, divided by the messages sent; hpam_pvars.h).
 *   mpi_msgrate [--quick] [--sizes a,b,c]
 * CSV: metric,pairs_or_bytes,value */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_pvars.h"

enum { window = 64, max_reps = 1001, max_bytes = 1 << 16 };

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static int rank, size;

/* iters windows of `bytes`-byte messages between the pairs */
static void windows(char *buf, int bytes, int iters)
{
    const int peer = rank ^ 1, sender = (rank % 2) == 0;
    MPI_Request rq[window];
    for (int i = 0; peer < size && i < iters; ++i) {
        for (int w = 0; w < window; ++w) {
            char *b = buf + (size_t) w * bytes;
            if (sender) MPI_Isend(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[w]);
            else MPI_Irecv(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[w]);
        }
        MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
        if (sender) MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else MPI_Send(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
    }
}

/* Median over reps of messages per second summed over all pairs. */
static double stream(char *buf, int bytes, int iters, int reps)
{
    const int pairs = size / 2;
    static double v[max_reps];
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        windows(buf, bytes, iters);
        double t = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        v[r] = (double) pairs * iters * window / tmax;
    }
    qsort(v, reps, sizeof v[0], cmp);
    return v[reps / 2];
}

/* hpam's counters per 8-byte message over iters windows (rank 0 prints). */
static void count_messages(char *buf, int iters)
{
    struct hpam_pvars p;
    if (hpam_pvars_open(&p) > 0) {
        unsigned long before[hpam_npvars], after[hpam_npvars], all[hpam_npvars];
        MPI_Barrier(MPI_COMM_WORLD);
        hpam_pvars_read(&p, before);
        windows(buf, 8, iters);
        hpam_pvars_read(&p, after);
        hpam_pvars_sum(before, after, all);
        const double n = (double) (size / 2) * iters * window;
        for (int c = 0; rank == 0 && c < hpam_npvars; ++c)
            printf("count_%s,%d,%.4f\n", hpam_pvar_names[c], size / 2, all[c] / n);
        if (rank == 0) printf("count_packets,%d,%.4f\n", size / 2, hpam_packets(all) / n);
    }
    hpam_pvars_close(&p);
}

int main(int argc, char **argv)
{
    int provided, quick = 0, nsizes = 0, sizes[32];
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            for (char *t = strtok(argv[++i], ","); t && nsizes < 32; t = strtok(NULL, ",")) {
                const long n = strtol(t, NULL, 10);
                if (n >= 0 && n <= max_bytes) sizes[nsizes++] = (int) n;
            }
    }
    char *buf = calloc(window, max_bytes);
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    const int bursts = quick ? 21 : 101;
    const double rate = stream(buf, 8, 32, bursts);
    if (rank == 0) printf("metric,pairs,value\nmessage_rate_Mmsgs,%d,%.3f\n", size / 2, rate / 1e6);
    count_messages(buf, quick ? 100 : 500);
    for (int k = 0; k < nsizes; ++k) {
        const int iters = 32 / (1 + sizes[k] / 512); /* 6 windows of 2 KiB: 768 KiB */
        const double r = stream(buf, sizes[k], iters > 1 ? iters : 1, bursts);
        if (rank == 0) printf("bandwidth_MBps,%d,%.1f\n", sizes[k], r * sizes[k] / 1e6);
        fflush(stdout);
    }
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
