/* Point-to-point over the BTL under test: every size from 0 B to 4 MiB
 * (powers of two and odd neighbours) checked byte for byte, a window of
 * rendezvous in flight, any-source / any-tag receives, probe, persistent
 * requests, non-contiguous datatypes.
 * Any number of ranks >= 2: rank r exchanges with its ring neighbours. */
#include <string.h>

#include "mpi_check.h"

static int rank, size;

static void sizes_exchange(void)
{
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t sizes[64];
    int n = 0;
    sizes[n++] = 0;
    for (size_t s = 1; s <= (4u << 20); s *= 2) {
        sizes[n++] = s;
        if (s > 2 && s < (4u << 20)) sizes[n++] = s + 3;
    }
    unsigned char *out = malloc(4u << 20), *in = malloc((4u << 20) + 64);
    for (int k = 0; k < n; ++k) {
        const size_t s = sizes[k];
        fill_pattern(out, s, rank, right, k);
        memset(in, 0xA5, s + 64);
        MPI_Request rq[2];
        MPI_Irecv(in, (int) s, MPI_BYTE, left, k, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(out, (int) s, MPI_BYTE, right, k, MPI_COMM_WORLD, &rq[1]);
        MPI_Status st[2];
        MPI_Waitall(2, rq, st);
        int count;
        MPI_Get_count(&st[0], MPI_BYTE, &count);
        CHECK((size_t) count == s, "size %zu: received %d bytes", s, count);
        const size_t bad = check_pattern(in, s, left, rank, k);
        CHECK(bad == s, "size %zu: byte %zu differs", s, bad);
        CHECK(in[s] == 0xA5, "size %zu: wrote past the end", s);
    }
    free(out);
    free(in);
}

/* A window of rendezvous in flight, as a stream sends them: 80 messages
 * (more than the 64 registrations a card keeps as spare slots, so spares
 * are taken, made and given back while others are alive), each from and
 * into a buffer of its own, of sizes on both sides of btl/hpam's eager
 * limit (32,704 bytes with ob1's header) and above it, in three rounds
 * that shift the sizes; every byte checked, and nothing past the end. */
static void rendezvous_window(void)
{
    enum { window = 80, rounds = 3 };
    static const size_t sizes[] = {32672, 32680, 32688, 32696, 32704, 32712,
                                   32720, 32736, 65537, 262144, (1u << 20) + 3};
    const int nsizes = (int) (sizeof sizes / sizeof sizes[0]);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out[window], *in[window];
    MPI_Request rq[2 * window];
    for (int round = 0; round < rounds; ++round) {
        for (int k = 0; k < window; ++k) {
            const size_t s = sizes[(k + round) % nsizes];
            out[k] = malloc(s);
            in[k] = malloc(s + 1);
            CHECK(out[k] != NULL && in[k] != NULL, "window buffers");
            fill_pattern(out[k], s, rank, right, 1000 + k);
            memset(in[k], 0xA5, s + 1);
            MPI_Irecv(in[k], (int) s, MPI_BYTE, left, 1000 + k, MPI_COMM_WORLD, &rq[k]);
        }
        for (int k = 0; k < window; ++k) {
            const size_t s = sizes[(k + round) % nsizes];
            MPI_Isend(out[k], (int) s, MPI_BYTE, right, 1000 + k, MPI_COMM_WORLD, &rq[window + k]);
        }
        MPI_Waitall(2 * window, rq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < window; ++k) {
            const size_t s = sizes[(k + round) % nsizes];
            const size_t bad = check_pattern(in[k], s, left, rank, 1000 + k);
            CHECK(bad == s, "round %d, message %d of %zu bytes: byte %zu differs", round, k, s, bad);
            CHECK(in[k][s] == 0xA5, "round %d, message %d of %zu bytes: wrote past the end", round,
                  k, s);
            free(out[k]);
            free(in[k]);
        }
    }
}

static void any_source_any_tag(void)
{
    /* Everyone sends 3 tagged messages to rank 0, which takes them in any order. */
    const int per = 3;
    if (rank == 0) {
        int seen[64][3];
        memset(seen, 0, sizeof seen);
        for (int m = 0; m < (size - 1) * per; ++m) {
            unsigned char buf[1000];
            MPI_Status st;
            MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size && st.MPI_TAG >= 100 && st.MPI_TAG < 100 + per,
                  "source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            int count;
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == 100 * (st.MPI_TAG - 99), "count %d", count);
            CHECK(check_pattern(buf, count, st.MPI_SOURCE, 0, st.MPI_TAG) == (size_t) count, "data");
            seen[st.MPI_SOURCE][st.MPI_TAG - 100]++;
        }
        for (int s = 1; s < size; ++s)
            for (int t = 0; t < per; ++t) CHECK(seen[s][t] == 1, "from %d tag %d: %d times", s, t, seen[s][t]);
    } else {
        for (int t = 0; t < per; ++t) {
            unsigned char buf[1000];
            fill_pattern(buf, 100 * (t + 1), rank, 0, 100 + t);
            MPI_Send(buf, 100 * (t + 1), MPI_BYTE, 0, 100 + t, MPI_COMM_WORLD);
        }
    }
}

static void probe(void)
{
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    const int n = 777 + rank;
    unsigned char *out = malloc(n);
    fill_pattern(out, n, rank, right, 5);
    MPI_Request rq;
    MPI_Isend(out, n, MPI_BYTE, right, 5, MPI_COMM_WORLD, &rq);
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
    int count;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(st.MPI_SOURCE == left && count == 777 + left, "probe saw %d bytes from %d", count, st.MPI_SOURCE);
    unsigned char *in = malloc(count);
    MPI_Recv(in, count, MPI_BYTE, st.MPI_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(check_pattern(in, count, left, rank, 5) == (size_t) count, "probe data");
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    free(in);
    free(out);
}

static void persistent(void)
{
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { n = 10000, rounds = 20 };
    static unsigned char out[n], in[n];
    MPI_Request rq[2];
    MPI_Recv_init(in, n, MPI_BYTE, left, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Send_init(out, n, MPI_BYTE, right, 7, MPI_COMM_WORLD, &rq[1]);
    for (int r = 0; r < rounds; ++r) {
        fill_pattern(out, n, rank, right, r);
        MPI_Startall(2, rq);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(check_pattern(in, n, left, rank, r) == n, "persistent round %d", r);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
}

static void noncontiguous(void)
{
    /* A strided vector of doubles and an indexed struct-like type. */
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    enum { count = 3000, stride = 3 };
    double *src = malloc(sizeof(double) * count * stride), *dst = malloc(sizeof(double) * count * stride);
    for (int i = 0; i < count * stride; ++i) {
        src[i] = rank * 1e6 + i;
        dst[i] = -1;
    }
    MPI_Datatype vec;
    MPI_Type_vector(count, 1, stride, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Sendrecv(src, 1, vec, right, 9, dst, 1, vec, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < count * stride; ++i) {
        const double want = (i % stride == 0) ? left * 1e6 + i : -1;
        CHECK(dst[i] == want, "vector element %d: %g != %g", i, dst[i], want);
    }
    MPI_Type_free(&vec);
    int blocklens[3] = {5, 100, 4000}, displs[3] = {0, 50, 1000};
    MPI_Datatype idx;
    MPI_Type_indexed(3, blocklens, displs, MPI_DOUBLE, &idx);
    MPI_Type_commit(&idx);
    for (int i = 0; i < count * stride; ++i) dst[i] = -1;
    MPI_Sendrecv(src, 1, idx, right, 10, dst, 1, idx, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int b = 0; b < 3; ++b)
        for (int i = displs[b]; i < displs[b] + blocklens[b]; ++i)
            CHECK(dst[i] == left * 1e6 + i, "indexed element %d", i);
    CHECK(dst[5] == -1 && dst[999] == -1, "indexed wrote outside its blocks");
    MPI_Type_free(&idx);
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks or more");
    sizes_exchange();
    rendezvous_window();
    any_source_any_tag();
    MPI_Barrier(MPI_COMM_WORLD); /* no later message may meet the wildcard receives */
    probe();
    persistent();
    noncontiguous();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_p2p: ok on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}
