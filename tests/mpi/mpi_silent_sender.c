/* A sender that makes no MPI call after its send (issue 30's reproducer).
 *
 * Rank `from` sends a zero-byte message to rank `to`, then spins on a word of
 * an MPI_Win_allocate_shared window, with no MPI call, until `to` has
 * received the message and answered by storing into that word. The hand-over
 * of an MCS lock works this way. If the wire loses the message, only its
 * sender's card can resend it: without help from outside the sender's MPI
 * calls the job hangs for good. Each spin is bounded (argv[2] seconds,
 * default 20): past it the rank reports the hang and aborts the job.
 *
 * Every rank takes each role in turn (hand-overs go round the ring, as an
 * MCS lock's do). argv[1]: hand-overs (default 200). Prints "<rank>: ok".
 */
#include "mpi_check.h"

#include <stdatomic.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int handovers = argc > 1 ? atoi(argv[1]) : 200;
    const double patience_s = argc > 2 ? atof(argv[2]) : 20.0;
    CHECK(size >= 2 && handovers > 0, "needs 2 or more ranks and a positive count");

    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size;
    MPI_Comm_size(node, &node_size);
    CHECK(node_size == size, "all ranks must share one node");

    /* One word per rank, all on rank 0: word[r] counts the hand-overs r
     * has received. */
    _Atomic int64_t *words = NULL;
    MPI_Win win;
    MPI_Aint bytes = 0 == rank ? (MPI_Aint) (sizeof(int64_t) * (size_t) size) : 0;
    MPI_Win_allocate_shared(bytes, sizeof(int64_t), MPI_INFO_NULL, node, &words, &win);
    MPI_Aint got_size;
    int disp;
    MPI_Win_shared_query(win, 0, &got_size, &disp, &words);
    if (0 == rank) {
        for (int r = 0; r < size; ++r) atomic_store(&words[r], 0);
    }
    MPI_Win_fence(0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t received = 0;
    for (int i = 0; i < handovers; ++i) {
        const int from = i % size, to = (i + 1) % size;
        if (rank == from) {
            MPI_Send(NULL, 0, MPI_BYTE, to, i, MPI_COMM_WORLD);
            /* No MPI call from here until `to` has answered through the
             * window: its count then passes i / size. */
            const double start = now_s();
            while (atomic_load(&words[to]) <= (int64_t) (i / size)) {
                if (now_s() - start > patience_s) {
                    fprintf(stderr, "rank %d: hand-over %d to rank %d not answered within %.0f s: "
                                    "the message was lost and never resent (hang)\n",
                            rank, i, to, patience_s);
                    MPI_Abort(MPI_COMM_WORLD, 4);
                }
            }
        } else if (rank == to) {
            MPI_Recv(NULL, 0, MPI_BYTE, from, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            atomic_store(&words[rank], ++received);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(atomic_load(&words[rank]) == received, "word %ld, received %ld",
          (long) atomic_load(&words[rank]), (long) received);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    printf("%d: ok (%d hand-overs)\n", rank, handovers);
    MPI_Finalize();
    return 0;
}
