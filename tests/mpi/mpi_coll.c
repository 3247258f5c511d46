/* Collectives over the BTL under test, results checked exactly: bcast,
 * reduce, allreduce, alltoall, alltoallv, allgather, barrier, each at small
 * and large sizes (so both eager and pipelined protocols run). */
#include <string.h>

#include "mpi_check.h"

static int rank, size;

static void bcast(int n)
{
    for (int root = 0; root < size; ++root) {
        unsigned char *b = malloc(n + 1);
        if (rank == root) fill_pattern(b, n, root, 0, n & 0xff);
        else memset(b, 0, n);
        MPI_Bcast(b, n, MPI_BYTE, root, MPI_COMM_WORLD);
        CHECK(check_pattern(b, n, root, 0, n & 0xff) == (size_t) n, "bcast %d from %d", n, root);
        free(b);
    }
}

static void reductions(int n)
{
    long *in = malloc(sizeof(long) * n), *out = malloc(sizeof(long) * n);
    for (int i = 0; i < n; ++i) in[i] = (long) rank * 1000003 + i;
    const long ranksum = (long) size * (size - 1) / 2;
    MPI_Reduce(in, out, n, MPI_LONG, MPI_SUM, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int i = 0; i < n; ++i) CHECK(out[i] == ranksum * 1000003 + (long) size * i, "reduce %d", i);
    MPI_Allreduce(in, out, n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) CHECK(out[i] == (long) (size - 1) * 1000003 + i, "allreduce max %d", i);
    MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < n; ++i) CHECK(out[i] == ranksum * 1000003 + (long) size * i, "allreduce sum %d", i);
    free(in);
    free(out);
}

static void alltoall(int n)
{
    unsigned char *s = malloc((size_t) n * size), *r = malloc((size_t) n * size);
    for (int d = 0; d < size; ++d) fill_pattern(s + (size_t) d * n, n, rank, d, 1);
    MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    for (int src = 0; src < size; ++src)
        CHECK(check_pattern(r + (size_t) src * n, n, src, rank, 1) == (size_t) n, "alltoall from %d", src);
    free(s);
    free(r);
}

static void alltoallv(int n)
{
    /* rank r sends (n + 13*d + r) bytes to rank d */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int st = 0, rt = 0;
    for (int d = 0; d < size; ++d) {
        sc[d] = n + 13 * d + rank;
        sd[d] = st;
        st += sc[d];
        rc[d] = n + 13 * rank + d;
        rd[d] = rt;
        rt += rc[d];
    }
    unsigned char *s = malloc(st + 1), *r = malloc(rt + 1);
    for (int d = 0; d < size; ++d) fill_pattern(s + sd[d], sc[d], rank, d, 2);
    MPI_Alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
    for (int src = 0; src < size; ++src)
        CHECK(check_pattern(r + rd[src], rc[src], src, rank, 2) == (size_t) rc[src], "alltoallv from %d", src);
    free(s); free(r); free(sc); free(sd); free(rc); free(rd);
}

static void allgather(int n)
{
    unsigned char *s = malloc(n + 1), *r = malloc((size_t) n * size + 1);
    fill_pattern(s, n, rank, 0, 3);
    MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    for (int src = 0; src < size; ++src)
        CHECK(check_pattern(r + (size_t) src * n, n, src, 0, 3) == (size_t) n, "allgather from %d", src);
    free(s);
    free(r);
}

static void barrier_order(void)
{
    /* After each barrier every rank sees the counter everyone wrote before it. */
    for (int round = 0; round < 50; ++round) {
        int mine = round * size + rank, sum = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == round * size * size + size * (size - 1) / 2, "round %d", round);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int sizes[] = {0, 1, 100, 4000, 70000, 1 << 20};
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const int n = sizes[k];
        bcast(n);
        reductions(n / 8 + 1);
        if (n <= 70000) {
            alltoall(n);
            alltoallv(n);
        }
        allgather(n);
    }
    barrier_order();
    if (rank == 0) printf("mpi_coll: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
