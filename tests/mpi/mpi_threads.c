/* MPI_THREAD_MULTIPLE over the BTL under test: two threads per rank exchange
 * tagged messages with the ring neighbours at the same time; every byte is
 * checked. */
#include <pthread.h>
#include <string.h>

#include "mpi_check.h"

static int rank, size;

static void *worker(void *arg)
{
    const int id = (int) (intptr_t) arg;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { rounds = 200, n = 3000 };
    unsigned char out[n], in[n];
    for (int r = 0; r < rounds; ++r) {
        const int tag = id * 1000 + (r % 500);
        fill_pattern(out, n, rank, right, tag);
        MPI_Sendrecv(out, n, MPI_BYTE, right, tag, in, n, MPI_BYTE, left, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(check_pattern(in, n, left, rank, tag) == n, "thread %d round %d", id, r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, worker, (void *) (intptr_t) i);
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_threads: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
