/* What a lost packet costs an MPI program: whole-run times (never medians
 * of bursts, which would leave the stalls out), over any BTL.
 *
 *   mpi_flood flood N      rank 0 and every other rank exchange N 8-byte
 *                          messages each way at once (windows of 64
 *                          nonblocking sends and receives per peer)
 *   mpi_flood stream N B   rank 0 streams N messages of B bytes to rank 1
 *                          (windows of 64, then a zero-byte answer)
 *   mpi_flood pingpong N   N 8-byte round trips between ranks 0 and 1
 *
 * Open MPI delivers a peer's messages in order, so every later message of
 * that peer waits behind a lost one until it is resent. Every message's
 * value is checked. Prints one CSV line:
 *   mode,ranks,bytes,seconds,per_second,retransmissions,early,spurious,timeouts,deferred
 * per_second: messages (flood, stream) or, for pingpong, the mean one-way
 * latency in microseconds; the last five per message sent, from hpam's
 * counters (hpam_pvars.h; 0 over other BTLs). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_pvars.h"

enum { window = 64 };

static int rank, size;

static uint64_t value_of(long k, int from) { return (uint64_t) k * 2654435761u + (uint64_t) from; }

/* One window each way with every peer (rank 0) or with rank 0 (others). */
static long flood(long n, uint64_t *sbuf, uint64_t *rbuf, MPI_Request *rq)
{
    long done = 0;
    while (done < n) {
        const long w = n - done < window ? n - done : window;
        int k = 0;
        for (int p = 0; p < size; ++p) {
            if (p == rank || (rank != 0 && p != 0)) continue;
            for (long i = 0; i < w; ++i) {
                uint64_t *s = &sbuf[(size_t) p * window + (size_t) i];
                *s = value_of(done + i, rank);
                MPI_Irecv(&rbuf[(size_t) p * window + (size_t) i], 1, MPI_UINT64_T, p, 0, MPI_COMM_WORLD, &rq[k++]);
                MPI_Isend(s, 1, MPI_UINT64_T, p, 0, MPI_COMM_WORLD, &rq[k++]);
            }
        }
        MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; ++p) {
            if (p == rank || (rank != 0 && p != 0)) continue;
            for (long i = 0; i < w; ++i)
                if (rbuf[(size_t) p * window + (size_t) i] != value_of(done + i, p)) {
                    fprintf(stderr, "rank %d: message %ld from %d wrong\n", rank, done + i, p);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
        }
        done += w;
    }
    return 2 * n * (rank == 0 ? size - 1 : 1);
}

static long stream(long n, size_t bytes, unsigned char *buf, MPI_Request *rq)
{
    for (long done = 0; done < n && rank < 2;) {
        const long w = n - done < window ? n - done : window;
        for (long i = 0; i < w; ++i) {
            unsigned char *b = buf + (size_t) i * bytes;
            if (rank == 0) {
                memset(b, (int) ((done + i) & 0xFF), bytes);
                MPI_Isend(b, (int) bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[i]);
            } else {
                MPI_Irecv(b, (int) bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[i]);
            }
        }
        MPI_Waitall((int) w, rq, MPI_STATUSES_IGNORE);
        if (rank == 1) {
            for (long i = 0; i < w; ++i)
                if (buf[(size_t) i * bytes] != (unsigned char) ((done + i) & 0xFF) ||
                    buf[(size_t) i * bytes + bytes - 1] != (unsigned char) ((done + i) & 0xFF)) {
                    fprintf(stderr, "rank 1: message %ld wrong\n", done + i);
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            MPI_Send(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        done += w;
    }
    return n;
}

static long pingpong(long n)
{
    uint64_t v = 0;
    for (long k = 0; k < n && rank < 2; ++k) {
        if (rank == 0) {
            v = value_of(k, 0);
            MPI_Send(&v, 1, MPI_UINT64_T, 1, 3, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_UINT64_T, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&v, 1, MPI_UINT64_T, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_UINT64_T, 0, 3, MPI_COMM_WORLD);
        }
        if (v != value_of(k, 0)) {
            fprintf(stderr, "rank %d: round trip %ld wrong\n", rank, k);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return 2 * n;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "flood";
    const long n = argc > 2 ? atol(argv[2]) : 100000;
    const size_t bytes = !strcmp(mode, "stream") && argc > 3 ? (size_t) atol(argv[3]) : 8;
    if (size < 2 || n <= 0 || bytes == 0 || bytes > (1u << 24) ||
        (strcmp(mode, "flood") && strcmp(mode, "stream") && strcmp(mode, "pingpong"))) {
        if (rank == 0) fprintf(stderr, "usage: mpi_flood flood N | stream N BYTES | pingpong N (2+ ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t) (2 * window * size));
    uint64_t *sbuf = calloc((size_t) window * size, sizeof(uint64_t));
    uint64_t *rbuf = calloc((size_t) window * size, sizeof(uint64_t));
    unsigned char *buf = malloc(bytes * window);
    if (!rq || !sbuf || !rbuf || !buf) MPI_Abort(MPI_COMM_WORLD, 2);
    struct hpam_pvars pv;
    (void) hpam_pvars_open(&pv);
    unsigned long before[hpam_npvars], after[hpam_npvars], all[hpam_npvars];
    MPI_Barrier(MPI_COMM_WORLD);
    hpam_pvars_read(&pv, before);
    const double start = MPI_Wtime();
    long mine = !strcmp(mode, "flood") ? flood(n, sbuf, rbuf, rq)
                : !strcmp(mode, "stream") ? stream(n, bytes, buf, rq)
                                          : pingpong(n);
    const double seconds = MPI_Wtime() - start;
    MPI_Barrier(MPI_COMM_WORLD);
    hpam_pvars_read(&pv, after);
    hpam_pvars_sum(before, after, all);
    if (rank == 0) {
        const double messages = (double) mine;
        const double per_second = !strcmp(mode, "pingpong") ? seconds / messages * 1e6 : messages / seconds;
        /* all[]: retransmissions 3, timeouts 6, early 11, spurious 12, deferred 13 (hpam_pvar_names) */
        printf("%s,%d,%zu,%.4f,%.1f,%.5f,%.5f,%.5f,%.5f,%.5f\n", mode, size, bytes, seconds, per_second,
               all[3] / messages, all[11] / messages, all[12] / messages, all[6] / messages,
               all[13] / messages);
    }
    hpam_pvars_close(&pv);
    free(rq);
    free(sbuf);
    free(rbuf);
    free(buf);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
