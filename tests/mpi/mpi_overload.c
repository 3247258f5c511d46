/* Overload and busy peers over the BTL under test. Times come from
 * CLOCK_MONOTONIC, which all ranks on the node share.
 *
 *   mpi_overload flood N SLEEP   3 ranks: rank 0 sends N messages of 256 B to
 *       rank 1, which sleeps SLEEP seconds outside MPI before receiving them;
 *       meanwhile rank 2 sends 100 messages to rank 0. Rank 0's resident
 *       memory must stay bounded (sampled every 1,000 sends) and rank 2's
 *       sends must complete while rank 1 still sleeps: a sender held up by a
 *       slow peer keeps serving the others.
 *   mpi_overload send_sleep SLEEP   2 ranks: rank 0 does 20 eager MPI_Sends
 *       back to back, then sleeps SLEEP seconds outside MPI; rank 1
 *       must have received all 20 before rank 0 wakes: once MPI_Send has
 *       returned, the message travels without further calls by the sender.
 *   mpi_overload compute SECONDS   2 ranks: rank 0 sends to rank 1, which
 *       computes for SECONDS without any MPI call before receiving: a busy
 *       peer is not a dead one, the job completes.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_check.h"

static int rank, size;

/* Sleeps outside MPI for s seconds (whole, even if a signal interrupts). */
static void sleep_outside_mpi(double s)
{
    const double until = now_s() + s;
    while (now_s() < until) usleep(10000);
}

static void flood(long n, double sleep_s)
{
    CHECK(size == 3, "flood needs 3 ranks");
    enum { len = 256, from_third = 100 };
    unsigned char buf[len];
    double woke = 0, third_done = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        const long before = rss_kib();
        long peak = before;
        for (long i = 0; i < n; ++i) {
            fill_pattern(buf, len, 0, 1, (int) (i & 0x7fff));
            MPI_Send(buf, len, MPI_BYTE, 1, (int) (i & 0x7fff), MPI_COMM_WORLD);
            if (i % 1000 == 0) {
                const long r = rss_kib();
                if (r > peak) peak = r;
            }
        }
        for (int k = 0; k < from_third; ++k) {
            MPI_Recv(buf, len, MPI_BYTE, 2, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(check_pattern(buf, len, 2, 0, k) == len, "message %d from rank 2", k);
        }
        printf("mpi_overload: rank 0 resident memory %ld KiB before, %ld KiB at most during "
               "%ld sends to a sleeping peer\n", before, peak, n);
        CHECK(peak - before < 64 * 1024, "resident memory grew by %ld KiB", peak - before);
    } else if (rank == 1) {
        sleep_outside_mpi(sleep_s);
        woke = now_s();
        for (long i = 0; i < n; ++i) {
            MPI_Recv(buf, len, MPI_BYTE, 0, (int) (i & 0x7fff), MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(check_pattern(buf, len, 0, 1, (int) (i & 0x7fff)) == len, "message %ld", i);
        }
    } else {
        usleep(200000); /* rank 0 is flooding by now */
        for (int k = 0; k < from_third; ++k) {
            fill_pattern(buf, len, 2, 0, k);
            MPI_Send(buf, len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        third_done = now_s();
    }
    double t[2] = {woke, third_done}, all[2];
    MPI_Allreduce(t, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(all[1] < all[0], "rank 2's sends to the flooding rank 0 completed %.3f s after the "
          "sleeping rank 1 woke: rank 0 stopped serving its other peers", all[1] - all[0]);
}

static void send_sleep(double sleep_s)
{
    CHECK(size == 2, "send_sleep needs 2 ranks");
    enum { count = 20 };
    /* Eager sizes, back to back: they outrun the receiver's answers. */
    static const int sizes[count] = {0,   1,    64,  255, 1000, 4000, 16, 800, 2048, 3000,
                                     100, 2000, 3,   512, 4000, 7,    90, 333, 1500, 4001};
    unsigned char *buf = malloc(70000);
    double received = 0, woke = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int k = 0; k < count; ++k) {
            fill_pattern(buf, (size_t) sizes[k], 0, 1, k);
            MPI_Send(buf, sizes[k], MPI_BYTE, 1, k, MPI_COMM_WORLD);
        }
        sleep_outside_mpi(sleep_s);
        woke = now_s();
    } else {
        for (int k = 0; k < count; ++k) {
            MPI_Status st;
            int got;
            MPI_Recv(buf, 70000, MPI_BYTE, 0, k, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == sizes[k] && check_pattern(buf, (size_t) got, 0, 1, k) == (size_t) got,
                  "message %d: %d bytes", k, got);
        }
        received = now_s();
    }
    double t[2] = {received, woke}, all[2];
    MPI_Allreduce(t, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(all[0] < all[1], "the last of 20 messages arrived %.3f s after the sender woke: "
          "MPI_Send returned before its message was on its way", all[0] - all[1]);
    free(buf);
}

static void compute(double seconds)
{
    CHECK(size == 2, "compute needs 2 ranks");
    enum { n = 3 };
    static const int sizes[n] = {100, 5000, 200000};
    unsigned char *buf = malloc(200000);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int k = 0; k < n; ++k) {
            fill_pattern(buf, (size_t) sizes[k], 0, 1, k);
            MPI_Send(buf, sizes[k], MPI_BYTE, 1, k, MPI_COMM_WORLD);
        }
    } else {
        volatile double x = 0; /* computes, no MPI call at all */
        const double until = now_s() + seconds;
        while (now_s() < until)
            for (int i = 0; i < 100000; ++i) x += 1e-9 * i;
        for (int k = 0; k < n; ++k) {
            MPI_Recv(buf, sizes[k], MPI_BYTE, 0, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(check_pattern(buf, (size_t) sizes[k], 0, 1, k) == (size_t) sizes[k], "message %d", k);
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 3, "usage: mpi_overload flood N SLEEP | send_sleep SLEEP | compute SECONDS");
    if (!strcmp(argv[1], "flood") && argc >= 4)
        flood(atol(argv[2]), atof(argv[3]));
    else if (!strcmp(argv[1], "send_sleep"))
        send_sleep(atof(argv[2]));
    else if (!strcmp(argv[1], "compute"))
        compute(atof(argv[2]));
    else
        CHECK(0, "unknown mode %s", argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_overload %s: ok\n", argv[1]);
    MPI_Finalize();
    return 0;
}
