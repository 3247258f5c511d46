/* MPI RMA latency on an MPI_Win_create window (the kind osc/rdma places on
 * the BTL): MPI_Put, MPI_Get (8 B and 4 KiB) and MPI_Fetch_and_op, each
 * completed by MPI_Win_flush, rank 0 to rank 1 under MPI_Win_lock_all.
 * CSV: op,bytes,median_us */
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
    int rank, quick = argc > 1 && !strcmp(argv[1], "--quick");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    enum { winbytes = 1 << 16 };
    char *base = calloc(1, winbytes), *local = calloc(1, winbytes);
    MPI_Win win;
    MPI_Win_create(base, winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    const int iters = quick ? 500 : 5000, reps = quick ? 3 : 7;
    const char *ops[] = {"put", "get", "put", "get", "fetch_and_op"};
    const int sizes[] = {8, 8, 4096, 4096, 8};
    if (rank == 0) printf("op,bytes,value\n");
    for (int k = 0; k < 5; ++k) {
        double v[16];
        for (int r = 0; r < reps; ++r) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            if (rank == 0) {
                for (int i = 0; i < iters; ++i) {
                    if (k == 4) {
                        long one = 1, old;
                        MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, 0, MPI_SUM, win);
                    } else if (k % 2 == 0) {
                        MPI_Put(local, sizes[k], MPI_BYTE, 1, 64, sizes[k], MPI_BYTE, win);
                    } else {
                        MPI_Get(local, sizes[k], MPI_BYTE, 1, 64, sizes[k], MPI_BYTE, win);
                    }
                    MPI_Win_flush(1, win);
                }
            }
            v[r] = (MPI_Wtime() - t0) / iters * 1e6;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        qsort(v, reps, sizeof v[0], cmp);
        if (rank == 0) printf("%s,%d,%.3f\n", ops[k], sizes[k], v[reps / 2]);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(base);
    free(local);
    MPI_Finalize();
    return 0;
}
