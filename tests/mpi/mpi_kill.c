/* A rank dies mid-run (SIGKILL) while the others keep sending to it: the
 * survivors must end with an error naming the lost peer within the give-up
 * time. Run with mpirun --enable-recovery so that the launcher does not
 * kill the job first. */
#include <signal.h>
#include <unistd.h>

#include "mpi_check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int victim = size - 1;
    char buf[256] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == victim) {
        for (int i = 0; i < 10; ++i) MPI_Recv(buf, sizeof buf, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(stderr, "mpi_kill: rank %d dies now\n", rank);
        fflush(stderr);
        kill(getpid(), SIGKILL);
    }
    if (rank == 0) {
        /* Far more than the victim will ever receive: sends pile up on the dead peer. */
        for (int i = 0; i < 100000; ++i) MPI_Send(buf, sizeof buf, MPI_BYTE, victim, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* never completes: the victim is gone */
    fprintf(stderr, "mpi_kill: rank %d got past the barrier: the lost peer went unnoticed\n", rank);
    MPI_Finalize();
    return 0;
}
