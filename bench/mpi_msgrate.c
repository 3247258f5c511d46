/* Message rate with several messages in flight: ranks are paired (0-1,
 * 2-3, ...); each sender posts a window of 64 nonblocking sends, the
 * receiver 64 receives, then a zero-byte ack; the aggregate rate over all
 * pairs is the median of the repetitions. With --sizes, the same stream is
 * repeated for each size and reported as bandwidth (MB/s), which gives the
 * small-message half of the bandwidth curve (N½ lies there).
 *   mpi_msgrate [--quick] [--sizes a,b,c]
 * CSV: metric,pairs_or_bytes,value */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { window = 64, max_reps = 16, max_bytes = 1 << 16 };

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* Median over reps of messages per second summed over all pairs. */
static double stream(char *buf, int bytes, int iters, int reps)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int pairs = size / 2, peer = rank ^ 1, sender = (rank % 2) == 0;
    MPI_Request rq[window];
    double v[max_reps];
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
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
        double t = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        v[r] = (double) pairs * iters * window / tmax;
    }
    qsort(v, reps, sizeof v[0], cmp);
    return v[reps / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, quick = 0, nsizes = 0, sizes[32];
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
    const double rate = stream(buf, 8, quick ? 200 : 2000, quick ? 3 : 7);
    if (rank == 0) printf("metric,pairs,value\nmessage_rate_Mmsgs,%d,%.3f\n", size / 2, rate / 1e6);
    for (int k = 0; k < nsizes; ++k) {
        const int iters = (quick ? 100 : 400) / (1 + sizes[k] / 4096);
        const double r = stream(buf, sizes[k], iters > 0 ? iters : 1, quick ? 3 : 5);
        if (rank == 0) printf("bandwidth_MBps,%d,%.1f\n", sizes[k], r * sizes[k] / 1e6);
        fflush(stdout);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
