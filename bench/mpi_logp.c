/* LogP signature at MPI level (HP-LAM section 4.2 method) between ranks 0
 * and 1 with 8-byte messages: RTT from ping-pong; o_s = time per MPI_Isend
 * in a burst of back-to-back sends; g = time per message in a saturating
 * stream (64 in flight); T(d) = time per message when the sender waits d
 * after each MPI_Send; o_r = g - o_s - d*, d* the last delay at which T
 * stays within 5% of g; L = RTT/2 - o_s - o_r.
 * CSV as bench/am_logp: param,value_ns then signature,delay_ns,interval_ns */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}
static double med(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}
static void spin(double secs)
{
    const double end = MPI_Wtime() + secs;
    while (MPI_Wtime() < end) {
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int reps = quick ? 3 : 7, n = quick ? 2000 : 10000;
    char buf[64][8];
    MPI_Request rq[64];
    double v[16], rtt, os, g = 0;
    for (int r = 0; r < reps; ++r) { /* RTT */
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int i = 0; i < n; ++i) {
            if (rank == 0) {
                MPI_Send(buf[0], 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf[0], 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf[0], 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf[0], 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        v[r] = (MPI_Wtime() - t0) / n;
    }
    rtt = med(v, reps);
    for (int r = 0; r < reps; ++r) { /* o_s: burst of 32 Isends, receives pre-posted */
        if (rank == 1)
            for (int w = 0; w < 32; ++w) MPI_Irecv(buf[w], 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[w]);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (rank == 0)
            for (int w = 0; w < 32; ++w) MPI_Isend(buf[w], 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[w]);
        v[r] = (MPI_Wtime() - t0) / 32;
        if (rank < 2) MPI_Waitall(32, rq, MPI_STATUSES_IGNORE);
    }
    os = med(v, reps);
    double deltas[64], iv[64];
    int np = 0;
    for (int d = -1; d <= 3000 && np < 64; d += (d < 0 ? 1 : (quick ? 250 : 100))) {
        const int m = d < 0 ? n : n / 4;
        for (int r = 0; r < reps; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            for (int i = 0; i < m; i += 64) {
                const int k = m - i < 64 ? m - i : 64;
                for (int w = 0; w < k; ++w) {
                    if (rank == 0) {
                        MPI_Isend(buf[w], 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[w]);
                        if (d > 0) spin(d * 1e-9);
                    } else if (rank == 1) {
                        MPI_Irecv(buf[w], 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[w]);
                    }
                }
                if (rank < 2) MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
            }
            if (rank == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (rank == 1) MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
            v[r] = (MPI_Wtime() - t0) / m;
        }
        if (d < 0) {
            g = med(v, reps);
        } else {
            deltas[np] = d;
            iv[np++] = med(v, reps);
        }
    }
    if (rank == 0) {
        double dstar = 0;
        for (int i = 0; i < np; ++i)
            if (iv[i] <= g * 1.05) dstar = deltas[i] * 1e-9;
        double orecv = g - os - dstar, lat;
        if (orecv < 0) orecv = 0;
        lat = rtt / 2 - os - orecv;
        if (lat < 0) lat = 0;
        printf("param,value_ns\nrtt,%.1f\nos,%.1f\nor,%.1f\ng,%.1f\nL,%.1f\n", rtt * 1e9, os * 1e9,
               orecv * 1e9, g * 1e9, lat * 1e9);
        printf("signature,delay_ns,interval_ns\n");
        for (int i = 0; i < np; ++i) printf("signature,%.0f,%.1f\n", deltas[i], iv[i] * 1e9);
    }
    MPI_Finalize();
    return 0;
}
