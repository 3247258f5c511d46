/* Many windows over the BTL under test (Open MPI's osc/rdma registers each
 * window's memory, and the shared state segment on the node's first rank,
 * with the BTL: one Hamlyn slot each).
 *
 *   mpi_windows churn N      creates and frees N windows of mixed sizes (0 B
 *                            included), one at a time, with puts, gets and an
 *                            accumulate on each, every value checked (rank 0
 *                            says how far it got every 1,000 windows);
 *   mpi_windows alive N      N windows of 4 KiB alive at once, RMA on each,
 *                            then all freed;
 *   mpi_windows limit        windows until MPI_Win_create fails (run with a
 *                            small btl_hpam_max_registrations): it must fail
 *                            cleanly, and freeing them all must make room.
 *
 * Before and after, every rank reads btl_hpam_slots_in_use (the deposit
 * card's registration slots in use): it must come back to where it was. */
#include <string.h>

#include "mpi_check.h"

static int rank, size;
static MPI_T_pvar_session session;
static MPI_T_pvar_handle slots_handle;

static void open_slots_pvar(void)
{
    MPI_T_pvar_session_create(&session);
    CHECK(open_pvar(session, "btl_hpam_slots_in_use", &slots_handle),
          "no btl_hpam_slots_in_use performance variable");
}

static unsigned long slots_in_use(void)
{
    unsigned long v = 0;
    CHECK(MPI_T_pvar_read(session, slots_handle, &v) == MPI_SUCCESS, "read btl_hpam_slots_in_use");
    return v;
}

/* Puts my rank-stamped words into the right neighbour's window, reads the
 * left neighbour's first word, adds 1 to the right's last word; checks all
 * of it after the closing fence. The window holds `bytes` bytes. */
static void rma_on(MPI_Win win, long *mem, size_t bytes, int round)
{
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const size_t words = bytes / sizeof(long);
    for (size_t i = 0; i < words; ++i) mem[i] = -1;
    MPI_Win_fence(0, win);
    long out[2] = {rank * 100000L + round, rank * 100000L + round + 1}, got = -2, one = 1;
    if (words >= 4) {
        MPI_Put(out, 2, MPI_LONG, right, 0, 2, MPI_LONG, win);
        MPI_Get(&got, 1, MPI_LONG, left, 2, 1, MPI_LONG, win);
        MPI_Accumulate(&one, 1, MPI_LONG, right, (MPI_Aint) words - 1, 1, MPI_LONG, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    if (words >= 4) {
        CHECK(mem[0] == left * 100000L + round && mem[1] == left * 100000L + round + 1,
              "round %d: put from %d: %ld %ld", round, left, mem[0], mem[1]);
        CHECK(got == -1, "round %d: get from %d read %ld", round, left, got);
        CHECK(mem[words - 1] == 0, "round %d: accumulate: %ld", round, mem[words - 1]);
    }
}

static MPI_Win make_window(size_t bytes, long **mem)
{
    *mem = bytes ? malloc(bytes) : NULL;
    MPI_Win win;
    CHECK(MPI_Win_create(*mem, (MPI_Aint) bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win) == MPI_SUCCESS,
          "MPI_Win_create of %zu bytes", bytes);
    return win;
}

static void churn(int n)
{
    static const size_t sizes[] = {0, 32, 4096, 8, 65536, 0, 1000, 1 << 20};
    const int kinds = sizeof sizes / sizeof sizes[0];
    const double start = now_s();
    for (int i = 0; i < n; ++i) {
        long *mem;
        const size_t bytes = sizes[i % kinds];
        MPI_Win win = make_window(bytes, &mem);
        rma_on(win, mem, bytes, i);
        MPI_Win_free(&win);
        free(mem);
        /* How far a slow run got (a loaded machine stretches each round trip). */
        if (rank == 0 && (i + 1) % 1000 == 0) {
            printf("mpi_windows churn: %d windows (%.1f s)\n", i + 1, now_s() - start);
            fflush(stdout);
        }
    }
}

static void alive(int n)
{
    MPI_Win *wins = malloc(sizeof(MPI_Win) * (size_t) n);
    long **mems = malloc(sizeof(long *) * (size_t) n);
    for (int i = 0; i < n; ++i) wins[i] = make_window(4096, &mems[i]);
    for (int i = 0; i < n; ++i) rma_on(wins[i], mems[i], 4096, i);
    for (int i = n; i-- > 0;) {
        MPI_Win_free(&wins[i]);
        free(mems[i]);
    }
    free(wins);
    free(mems);
}

/* Creates windows until one fails (errors return); all ranks agree on the
 * count made. Frees them; then a window can be made again. */
static int up_to_the_limit(void)
{
    enum { most = 100000 };
    MPI_Win *wins = malloc(sizeof(MPI_Win) * most);
    long **mems = malloc(sizeof(long *) * most);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int made = 0;
    for (; made < most; ++made) {
        mems[made] = malloc(4096);
        int ok = MPI_SUCCESS == MPI_Win_create(mems[made], 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wins[made]);
        int all_ok;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (!all_ok) {
            if (ok) MPI_Win_free(&wins[made]);
            free(mems[made]);
            break;
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(made < most, "no window creation failed in %d", most);
    for (int i = made; i-- > 0;) {
        MPI_Win_free(&wins[i]);
        free(mems[i]);
    }
    long *mem;
    MPI_Win win = make_window(4096, &mem);
    rma_on(win, mem, 4096, 0);
    MPI_Win_free(&win);
    free(mem);
    free(wins);
    free(mems);
    return made;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 2, "usage: mpi_windows churn N | alive N | limit");
    open_slots_pvar();
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long before = slots_in_use();
    const int n = argc > 2 ? atoi(argv[2]) : 0;
    int made = 0;
    if (!strcmp(argv[1], "churn"))
        churn(n);
    else if (!strcmp(argv[1], "alive"))
        alive(n);
    else if (!strcmp(argv[1], "limit"))
        made = up_to_the_limit();
    else
        CHECK(0, "unknown mode %s", argv[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long after = slots_in_use();
    CHECK(after == before, "registration slots in use: %lu before, %lu after", before, after);
    MPI_T_pvar_handle_free(session, &slots_handle);
    MPI_T_pvar_session_free(&session);
    if (rank == 0 && made)
        printf("mpi_windows %s: ok (slots in use %lu before and after; %d windows made before "
               "the limit)\n", argv[1], before, made);
    else if (rank == 0)
        printf("mpi_windows %s: ok (slots in use %lu before and after)\n", argv[1], before);
    MPI_T_finalize(); /* before MPI_Finalize: see mpi_pvars.c */
    MPI_Finalize();
    return 0;
}
