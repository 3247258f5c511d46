/* Message rate with several messages in flight: ranks are paired (0-1,
 * 2-3, ...); each sender posts a window of 64 nonblocking 8-byte sends, the
 * receiver 64 receives, then a zero-byte ack; the aggregate rate over all
 * pairs is the median of the repetitions. CSV: metric,pairs,value */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    enum { window = 64 };
    const int pairs = size / 2, iters = quick ? 200 : 2000, reps = quick ? 3 : 7;
    const int peer = rank ^ 1, sender = (rank % 2) == 0;
    char buf[window][8];
    MPI_Request rq[window];
    double v[16];
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (peer < size) {
            for (int i = 0; i < iters; ++i) {
                for (int w = 0; w < window; ++w) {
                    if (sender) MPI_Isend(buf[w], 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[w]);
                    else MPI_Irecv(buf[w], 8, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[w]);
                }
                MPI_Waitall(window, rq, MPI_STATUSES_IGNORE);
                if (sender) MPI_Recv(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else MPI_Send(NULL, 0, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0, tmax;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        v[r] = (double) pairs * iters * window / tmax / 1e6;
    }
    qsort(v, reps, sizeof v[0], cmp);
    if (rank == 0) printf("metric,pairs,value\nmessage_rate_Mmsgs,%d,%.3f\n", pairs, v[reps / 2]);
    MPI_Finalize();
    return 0;
}
