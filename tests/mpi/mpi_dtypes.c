/* Derived datatypes of every shape over the BTL under test, with blocking
 * MPI_Send / MPI_Recv between rank pairs (2k, 2k+1), every byte checked:
 * the receiver compares its whole buffer (gaps and margins included) with
 * what MPI_Unpack of the expected packed stream makes of a buffer filled
 * the same way, so a fragment lost, delivered twice, stale or misplaced
 * shows as a wrong byte. The packed stream depends on the round, so a
 * fragment from an earlier message never passes for a current one.
 *
 *   mpi_dtypes [-r ROUNDS] [-m MAX_BYTES] [-s SHAPE[,SHAPE...]] [-t SECONDS]
 *              [-p send|recv]
 *
 * SHAPE is one of the names in `shapes` below ("all" by default). Each
 * shape is sent at packed sizes 0 B .. MAX_BYTES (default 4 MiB; a shape
 * with a fixed size goes once), ROUNDS times (default 1); with -t the
 * rounds repeat until SECONDS have passed. With -p, the sender sends (send)
 * or the receiver receives (recv) the packed bytes as MPI_BYTE instead. */
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "mpi_check.h"

static int rank, size, peer;

/* ---- shapes ------------------------------------------------------------ */

/* A shape makes one "element" datatype; a message is `count` of them.
 * fixed_count > 0: the shape is one message of that many elements (the
 * large nested types from the issue), sent once per round. */
typedef struct shape {
    const char *name;
    MPI_Datatype (*make)(void);
    int fixed_count;
} shape_t;

static MPI_Datatype commit(MPI_Datatype t)
{
    MPI_Type_commit(&t);
    return t;
}

static MPI_Datatype make_bytes(void) { return MPI_BYTE; }

static MPI_Datatype make_contiguous(void) /* five shorts: 10 bytes, elements 2-aligned */
{
    MPI_Datatype t;
    MPI_Type_contiguous(5, MPI_SHORT, &t);
    return commit(t);
}

static MPI_Datatype make_vector(void) /* one double in three */
{
    MPI_Datatype t;
    MPI_Type_vector(16, 1, 3, MPI_DOUBLE, &t);
    return commit(t);
}

static MPI_Datatype make_indexed(void) /* uneven int blocks with holes */
{
    int len[5] = {3, 1, 4, 1, 5}, disp[5] = {0, 5, 9, 20, 30};
    MPI_Datatype t;
    MPI_Type_indexed(5, len, disp, MPI_INT, &t);
    return commit(t);
}

static MPI_Datatype make_hindexed(void) /* int blocks at unaligned byte displacements */
{
    int len[4] = {2, 1, 3, 1};
    MPI_Aint disp[4] = {0, 13, 40, 77};
    MPI_Datatype t;
    MPI_Type_create_hindexed(4, len, disp, MPI_INT, &t);
    return commit(t);
}

static MPI_Datatype make_subarray(void) /* a 3-D Fortran-order subarray of shorts */
{
    int sizes[3] = {5, 4, 2}, subsizes[3] = {3, 2, 2}, starts[3] = {1, 1, 0};
    MPI_Datatype t;
    MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_SHORT, &t);
    return commit(t);
}

static MPI_Datatype make_struct_int_double(void) /* {int; double}: 4 bytes of padding */
{
    int len[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, t;
    MPI_Type_create_struct(2, len, disp, types, &t);
    return commit(t);
}

static MPI_Datatype subarray_2d_int(void)
{
    int sizes[2] = {64, 64}, subsizes[2] = {40, 30}, starts[2] = {5, 7};
    MPI_Datatype t;
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t);
    return t;
}

static MPI_Datatype make_struct_subarray(void) /* struct of a 2-D subarray of int, and an int */
{
    MPI_Datatype sub = subarray_2d_int(), t;
    MPI_Aint lb, ext;
    MPI_Type_get_extent(sub, &lb, &ext);
    int len[2] = {1, 3};
    MPI_Aint disp[2] = {0, ext + 16};
    MPI_Datatype types[2] = {sub, MPI_INT};
    MPI_Type_create_struct(2, len, disp, types, &t);
    MPI_Type_free(&sub);
    return commit(t);
}

static MPI_Datatype make_resized(void) /* a vector with negative lower bound and a tight extent */
{
    MPI_Datatype v, t;
    MPI_Type_create_hvector(4, 3, -40, MPI_SHORT, &v);
    MPI_Type_create_resized(v, -130, 48, &t);
    MPI_Type_free(&v);
    return commit(t);
}

static MPI_Datatype make_contig_of_vector(void)
{
    MPI_Datatype v, t;
    MPI_Type_vector(5, 2, 7, MPI_FLOAT, &v);
    MPI_Type_contiguous(3, v, &t);
    MPI_Type_free(&v);
    return commit(t);
}

/* An indexed type of ints inside a 4-D subarray: 256 bytes packed. */
static MPI_Datatype subarray_4d_of_indexed(void)
{
    int len[4] = {1, 2, 3, 2}, disp[4] = {0, 2, 5, 9};
    MPI_Datatype idx, sub;
    MPI_Type_indexed(4, len, disp, MPI_INT, &idx);
    int sizes[4] = {3, 2, 3, 2}, subsizes[4] = {2, 2, 2, 1}, starts[4] = {1, 0, 0, 1};
    MPI_Type_create_subarray(4, sizes, subsizes, starts, MPI_ORDER_C, idx, &sub);
    MPI_Type_free(&idx);
    return sub;
}

/* The wide type: an hindexed of 2,048 blocks of two 4-D subarrays
 * of an indexed type of ints, spread over 64 MiB in shuffled order: 1 MiB
 * packed. */
static MPI_Datatype make_wide(void)
{
    enum { blocks = 2048 };
    static int len[blocks];
    static MPI_Aint disp[blocks];
    for (int k = 0; k < blocks; ++k) {
        len[k] = 2;
        const int j = (k * 1237) % blocks; /* 1237 is prime to 2048: a permutation */
        disp[k] = (MPI_Aint) j * 32768 + (j % 7) * 8;
    }
    MPI_Datatype sub = subarray_4d_of_indexed(), t;
    MPI_Type_create_hindexed(blocks, len, disp, sub, &t);
    MPI_Type_free(&sub);
    return commit(t);
}

static MPI_Datatype make_nested_small(void) /* the wide type's inner part, as an element */
{
    return commit(subarray_4d_of_indexed());
}

static const shape_t shapes[] = {
    {"bytes", make_bytes, 0},
    {"contiguous", make_contiguous, 0},
    {"vector", make_vector, 0},
    {"indexed", make_indexed, 0},
    {"hindexed", make_hindexed, 0},
    {"subarray", make_subarray, 0},
    {"struct", make_struct_int_double, 0},
    {"struct_subarray", make_struct_subarray, 0},
    {"resized", make_resized, 0},
    {"contig_vector", make_contig_of_vector, 0},
    {"nested", make_nested_small, 0},
    {"wide", make_wide, 1},                              /* 1 MiB over 64 MiB */
    {"struct_3m", make_struct_int_double, 262144},       /* 3 MiB of {int; double} */
    {"struct_subarray_1m", make_struct_subarray, 218},   /* ~1 MiB */
};
enum { nshapes = sizeof shapes / sizeof shapes[0] };

/* ---- buffers ----------------------------------------------------------- */

enum { margin = 256 };
static const unsigned char sentinel = 0xC3;

typedef struct span {
    unsigned char *mem; /* mapping */
    size_t bytes;       /* its length */
    unsigned char *buf; /* the datatype's buffer argument (may point before true lb) */
    bool zero_fill;     /* too large to fill: fresh zero pages are the sentinel */
} span_t;

static span_t span_for(MPI_Datatype t, int count)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    /* Elements sit ext apart: the first's true lb to the last's true ub. */
    MPI_Aint lo = tlb, hi = tlb + text;
    if (count > 1) {
        if (ext >= 0) hi += (MPI_Aint) (count - 1) * ext;
        else lo += (MPI_Aint) (count - 1) * ext;
    }
    span_t s;
    s.bytes = (size_t) (hi - lo) + 2 * margin;
    s.zero_fill = s.bytes > (32u << 20);
    s.mem = mmap(NULL, s.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(s.mem != MAP_FAILED, "mmap %zu bytes", s.bytes);
    s.buf = s.mem + margin - lo;
    return s;
}

static void span_reset(span_t *s, unsigned char fill)
{
    if (s->zero_fill) {
        madvise(s->mem, s->bytes, MADV_DONTNEED); /* back to zero pages */
    } else {
        memset(s->mem, fill, s->bytes);
    }
}

static void span_free(span_t *s) { munmap(s->mem, s->bytes); }

/* The packed stream of one message: depends on round, shape, size and sender. */
static void fill_stream(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 0x9E3779B9u;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char) (x >> 11);
    }
}

/* ---- one message ------------------------------------------------------- */

typedef struct message {
    MPI_Datatype type;
    int count;
    size_t packed;       /* bytes of data */
    unsigned char *stream;
    span_t send, recv, expect;
} message_t;

static void message_init(message_t *m, MPI_Datatype t, int count)
{
    int psize, tsize;
    MPI_Type_size(t, &tsize);
    m->type = t;
    m->count = count;
    m->packed = (size_t) tsize * (size_t) count;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    m->stream = malloc((size_t) psize + 1);
    m->send = span_for(t, count);
    m->recv = span_for(t, count);
    m->expect = span_for(t, count);
}

static void message_free(message_t *m)
{
    free(m->stream);
    span_free(&m->send);
    span_free(&m->recv);
    span_free(&m->expect);
}

static void unpack_into(message_t *m, span_t *s)
{
    int pos = 0;
    MPI_Unpack(m->stream, (int) m->packed, &pos, s->buf, m->count, m->type, MPI_COMM_WORLD);
}

/* Which stretches of the packed stream came out wrong (at most a few are
 * printed): tells a lost, doubled or misplaced fragment from a bit error. */
static void report_stream_damage(message_t *m, const char *name)
{
    unsigned char *got = malloc(m->packed + 1);
    int pos = 0;
    MPI_Pack(m->recv.buf, m->count, m->type, got, (int) m->packed, &pos, MPI_COMM_WORLD);
    int shown = 0;
    size_t wrong = 0;
    for (size_t i = 0; i < m->packed;) {
        if (got[i] == m->stream[i]) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < m->packed && got[j] != m->stream[j]) ++j;
        wrong += j - i;
        if (shown++ < 8) {
            /* Where in the stream did the wrong bytes belong (misplaced data)? */
            long from = -1;
            if (j - i >= 16)
                for (size_t k = 0; k + 16 <= m->packed && from < 0; ++k)
                    if (!memcmp(m->stream + k, got + i, 16)) from = (long) k;
            fprintf(stderr, "rank %d: %s: packed bytes [%zu, %zu) wrong%s%ld\n", rank, name, i, j,
                    from >= 0 ? ": they are the stream's bytes at " : "", from);
        }
        i = j;
    }
    fprintf(stderr, "rank %d: %s: %zu of %zu packed bytes wrong in %d stretches\n", rank, name,
            wrong, m->packed, shown);
    free(got);
}

static void check_received(message_t *m, const char *name, int round, const MPI_Status *st)
{
    int count;
    MPI_Get_count(st, m->type, &count);
    CHECK(count == m->count, "%s, %zu bytes, round %d: received %d elements, want %d", name,
          m->packed, round, count, m->count);
    span_reset(&m->expect, sentinel);
    unpack_into(m, &m->expect);
    if (memcmp(m->recv.mem, m->expect.mem, m->recv.bytes) == 0) return;
    report_stream_damage(m, name);
    size_t i = 0;
    while (m->recv.mem[i] == m->expect.mem[i]) ++i;
    CHECK(0, "%s, %zu bytes packed, round %d: byte %zu of the buffer span is %u, want %u "
          "(%s)", name, m->packed, round, i, m->recv.mem[i], m->expect.mem[i],
          i < margin || i >= m->recv.bytes - margin ? "outside the datatype" : "inside its span");
}

/* Which side sees the typed buffer: both, or one of them the packed bytes
 * (a contiguous message meeting a derived type takes other protocol paths). */
enum sides { both_typed, send_packed, recv_packed };
static enum sides sides = both_typed;

static void send_one(message_t *m, unsigned seed, int tag)
{
    fill_stream(m->stream, m->packed, seed);
    if (sides == send_packed) {
        MPI_Send(m->stream, (int) m->packed, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
        return;
    }
    span_reset(&m->send, 0x5A);
    unpack_into(m, &m->send);
    MPI_Send(m->send.buf, m->count, m->type, peer, tag, MPI_COMM_WORLD);
}

static void recv_one(message_t *m, unsigned seed, int tag, const char *name, int round)
{
    MPI_Status st;
    if (sides == recv_packed) {
        unsigned char *got = malloc(m->packed + 1);
        memset(got, sentinel, m->packed + 1);
        MPI_Recv(got, (int) m->packed + 1, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st);
        fill_stream(m->stream, m->packed, seed);
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK((size_t) count == m->packed, "%s, round %d: received %d bytes, want %zu", name,
              round, count, m->packed);
        size_t i = 0;
        while (i < m->packed && got[i] == m->stream[i]) ++i;
        CHECK(i == m->packed, "%s, %zu bytes packed, round %d: packed byte %zu is %u, want %u",
              name, m->packed, round, i, got[i], m->stream[i]);
        CHECK(got[m->packed] == sentinel, "%s: wrote past the end", name);
        free(got);
        return;
    }
    span_reset(&m->recv, sentinel);
    MPI_Recv(m->recv.buf, m->count, m->type, peer, tag, MPI_COMM_WORLD, &st);
    fill_stream(m->stream, m->packed, seed);
    check_received(m, name, round, &st);
}

/* Even rank of the pair sends first; both send and receive once. */
static void exchange(message_t *m, const char *name, int shape, int size_index, int round)
{
    const unsigned my_seed = (unsigned) (round * 7919 + shape * 131 + size_index * 17 + rank);
    const unsigned peer_seed = my_seed - (unsigned) rank + (unsigned) peer;
    for (int turn = 0; turn < 2; ++turn) {
        if ((turn == 0) == (rank % 2 == 0))
            send_one(m, my_seed, size_index);
        else
            recv_one(m, peer_seed, size_index, name, round);
    }
}

/* Element counts whose packed size runs from 0 to max_bytes: 0, one
 * element, then powers of eight with an odd neighbour from 4 KiB on (the
 * eager limit and the fragment size lie there), then max_bytes. */
static int counts_for(MPI_Datatype t, size_t max_bytes, int *counts, int cap)
{
    int tsize, n = 0;
    MPI_Type_size(t, &tsize);
    counts[n++] = 0;
    int last = 0;
    for (size_t bytes = 1; bytes <= max_bytes && n < cap - 1; bytes *= 8) {
        const size_t sizes[2] = {bytes, bytes >= 4096 ? bytes + bytes / 3 + 5 : bytes};
        for (int k = 0; k < 2 && n < cap - 1; ++k) {
            int c = (int) ((sizes[k] + (size_t) tsize - 1) / (size_t) tsize);
            if (c < 1) c = 1;
            if ((size_t) c * (size_t) tsize > max_bytes || c <= last) continue;
            counts[n++] = last = c;
        }
    }
    const int top = (int) (max_bytes / (size_t) tsize);
    if (top > last) counts[n++] = top;
    return n;
}

static bool selected(const char *list, const char *name)
{
    if (!strcmp(list, "all")) return true;
    const size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return true;
    return false;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size % 2 == 0, "needs an even number of ranks, got %d", size);
    peer = rank ^ 1;
    int rounds = 1;
    double seconds = 0;
    size_t max_bytes = 4u << 20;
    const char *list = "all";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-m")) max_bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-s")) list = argv[i + 1];
        else if (!strcmp(argv[i], "-t")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) sides = !strcmp(argv[i + 1], "send") ? send_packed
                                                 : !strcmp(argv[i + 1], "recv") ? recv_packed
                                                                                : both_typed;
    }
    const double start = now_s();
    long messages = 0;
    for (int round = 0;; ++round) {
        for (int s = 0; s < nshapes; ++s) {
            if (!selected(list, shapes[s].name)) continue;
            MPI_Datatype t = shapes[s].make();
            int counts[64], n;
            if (shapes[s].fixed_count > 0) {
                counts[0] = shapes[s].fixed_count;
                n = 1;
            } else {
                n = counts_for(t, max_bytes, counts, 64);
            }
            for (int k = 0; k < n; ++k) {
                message_t m;
                message_init(&m, t, counts[k]);
                exchange(&m, shapes[s].name, s, k, round);
                message_free(&m);
                messages += 2;
            }
            if (t != MPI_BYTE) MPI_Type_free(&t);
        }
        /* Every rank agrees on when to stop (rounds may take different times). */
        int more = (round + 1 < rounds) || now_s() - start < seconds;
        MPI_Allreduce(MPI_IN_PLACE, &more, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        if (!more) break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_dtypes: ok (%ld messages per rank, every byte checked)\n", messages);
    MPI_Finalize();
    return 0;
}
