/* MPI RMA on MPI_Win_create windows (the kind osc/rdma would place on the
 * BTL): put, get, accumulate, fetch_and_op and compare_and_swap under fence,
 * lock/unlock and PSCW (post/start/complete/wait), results checked exactly. */
#include <string.h>

#include "mpi_check.h"

enum { n = 4096 };
static int rank, size;
static long *base;
static MPI_Win win;

static void reset(long v)
{
    MPI_Win_fence(0, win);
    for (int i = 0; i < n; ++i) base[i] = v;
    MPI_Win_fence(0, win);
}

static void fence_put_get(void)
{
    reset(-1);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long src[n];
    for (int i = 0; i < n; ++i) src[i] = rank * 100000 + i;
    MPI_Win_fence(0, win);
    MPI_Put(src, n, MPI_LONG, right, 0, n, MPI_LONG, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < n; ++i) CHECK(base[i] == left * 100000 + i, "fence put %d: %ld", i, base[i]);
    long got[n];
    MPI_Get(got, n, MPI_LONG, left, 0, n, MPI_LONG, win);
    MPI_Win_fence(0, win);
    const int leftleft = (left + size - 1) % size;
    for (int i = 0; i < n; ++i) CHECK(got[i] == leftleft * 100000 + i, "fence get %d: %ld", i, got[i]);
}

static void fence_accumulate(void)
{
    reset(0);
    long one[n];
    for (int i = 0; i < n; ++i) one[i] = i + 1;
    MPI_Win_fence(0, win);
    for (int t = 0; t < size; ++t) MPI_Accumulate(one, n, MPI_LONG, t, 0, n, MPI_LONG, MPI_SUM, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < n; ++i) CHECK(base[i] == (long) size * (i + 1), "accumulate %d", i);
}

static void lock_atomics(void)
{
    reset(0);
    const int rounds = 50;
    /* Everyone adds 1 to word 0 of rank 0, `rounds` times; the fetched values are distinct. */
    long *olds = malloc(sizeof(long) * rounds);
    for (int r = 0; r < rounds; ++r) {
        long one = 1;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Fetch_and_op(&one, &olds[r], MPI_LONG, 0, 0, MPI_SUM, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(base[0] == (long) size * rounds, "fetch_and_op total %ld", base[0]);
    for (int r = 1; r < rounds; ++r) CHECK(olds[r] > olds[r - 1], "fetched values not increasing");
    free(olds);
    /* Compare-and-swap: each rank claims slot 1 of rank 0 in turn; exactly one wins per round. */
    MPI_Barrier(MPI_COMM_WORLD);
    long mine = rank + 1, expect = 0, result = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Compare_and_swap(&mine, &expect, &result, MPI_LONG, 0, 1, win);
    MPI_Win_unlock(0, win);
    int won = result == 0, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%d ranks won the compare-and-swap", winners);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(base[1] >= 1 && base[1] <= size, "cas value %ld", base[1]);
    /* Exclusive lock: put then get back the same bytes from a neighbour. */
    const int right = (rank + 1) % size;
    long v[16], back[16];
    for (int i = 0; i < 16; ++i) v[i] = rank * 1000 + i;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(v, 16, MPI_LONG, right, 100 + 16 * rank, 16, MPI_LONG, win);
    MPI_Win_flush(right, win);
    MPI_Get(back, 16, MPI_LONG, right, 100 + 16 * rank, 16, MPI_LONG, win);
    MPI_Win_unlock(right, win);
    for (int i = 0; i < 16; ++i) CHECK(back[i] == v[i], "lock put/get %d", i);
}

static void pscw(void)
{
    reset(0);
    MPI_Group world, peers;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Exposure to the left neighbour, access to the right one. */
    MPI_Group_incl(world, 1, &left, &peers);
    MPI_Win_post(peers, 0, win);
    MPI_Group access;
    MPI_Group_incl(world, 1, &right, &access);
    MPI_Win_start(access, 0, win);
    long v[32];
    for (int i = 0; i < 32; ++i) v[i] = rank * 7 + i;
    MPI_Put(v, 32, MPI_LONG, right, 0, 32, MPI_LONG, win);
    long inc = 5;
    MPI_Accumulate(&inc, 1, MPI_LONG, right, 40, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    for (int i = 0; i < 32; ++i) CHECK(base[i] == left * 7 + i, "pscw put %d", i);
    CHECK(base[40] == 5, "pscw accumulate %ld", base[40]);
    MPI_Group_free(&access);
    MPI_Group_free(&peers);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    base = malloc(sizeof(long) * n);
    MPI_Win_create(base, sizeof(long) * n, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    fence_put_get();
    fence_accumulate();
    lock_atomics();
    pscw();
    MPI_Win_free(&win);
    free(base);
    if (rank == 0) printf("mpi_rma: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
