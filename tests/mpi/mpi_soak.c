/* Soak: all-to-all traffic for a given time, every byte checked, while the
 * job's resource use is sampled and must stay flat.
 *
 *   mpi_soak [-t SECONDS] [-i SAMPLE_SECONDS] [-g RSS_GROWTH_PERCENT] [-f]
 *            [-w EVERY] [-u] [-c]
 *
 * Each round, every rank sends a message to every other rank (MPI_Isend /
 * MPI_Irecv, sizes cycling from 0 B to 256 KiB, so eager, pipelined and
 * rendezvous paths all run) and does RMA on a long-lived MPI_Win_create
 * window: puts into its own slot of every rank's window, an accumulate on
 * every rank's counter, then gets its slot back, under fences; every
 * EVERY-th round (default 16) it also makes a short-lived window (0 B ..
 * 64 KiB), puts into it, checks it and frees it: in turn by MPI_Win_create
 * over the program's memory and by MPI_Win_allocate over memory the MPI
 * library allocates (over pml/osc ucx with UCX_TLS=hpam: hpam's memory
 * domain allocation, card memory). With -c every allocated window of more
 * than 0 bytes must lie in card memory (a mapping of an hpam segment of
 * this process). -u: no BTL performance variables (over pml ucx; the
 * counters are not read or checked).
 *
 * Every SAMPLE_SECONDS (default 2) rank 0 records each rank's resident
 * memory, the number of /dev/shm segments of this job and the protocol
 * counters (MPI_T btl_hpam_* pvars summed over the ranks). At the end:
 * after the warm-up (the first quarter of the run) no rank's resident
 * memory may grow by more than RSS_GROWTH_PERCENT (default 5) over its
 * first sample after warm-up, the job's segments may change neither in
 * number nor in bytes, and the
 * counters must agree: retransmissions >= packets the wire dropped, the
 * packets refused as damaged (CRC, malformed, key) between half and twice
 * the packets corrupted (a copy may be duplicated, or dropped for want of a
 * receive block before its CRC is seen), no rule violations. With -f every fault kind (drop,
 * duplicate, corrupt, reorder) must have happened at least once.
 *
 * At the end rank 0 prints a table of totals, per rank and in all:
 * point-to-point messages and bytes sent and received (every byte checked;
 * the job's sent and received totals must agree), RMA puts, gets and
 * accumulates with the bytes they moved, windows created and freed, and
 * each rank's transport counters (requests, retransmissions, faults
 * injected, CRC failures, overflow drops) and resident memory at the first
 * and the last sample. Rank 0 names the job's segment prefix ("mpi_soak:
 * segment prefix P"), so that a script can check that nothing of the job
 * is left in /dev/shm once it has ended. */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "mpi_check.h"

static int rank, size;
static int use_pvars = 1; /* -u: none (over pml ucx no BTL registers them) */
static const char *const counter_names[] = {
    "requests_sent", "retransmissions", "timeouts",     "wire_dropped",    "wire_duplicated",
    "wire_corrupted", "wire_reordered", "crc_failures", "malformed",       "key_rejections",
    "overflow_drops", "duplicates_reflected", "stale_replies", "held_in_order",
    "stream_rejected", "rule_violations", "busy_peer_waits",
};
enum { ncounters = sizeof counter_names / sizeof counter_names[0] };
enum { c_requests, c_retrans, c_timeouts, c_dropped, c_duplicated, c_corrupted, c_reordered,
       c_crc, c_malformed, c_key, c_overflow, c_reflected, c_stale, c_held, c_rejected,
       c_violations, c_busy };

/* ---- counters (MPI_T pvars) ------------------------------------------- */

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[ncounters];

static void counters_open(void)
{
    if (!use_pvars) return;
    MPI_T_pvar_session_create(&session);
    for (int k = 0; k < ncounters; ++k) {
        char name[128];
        snprintf(name, sizeof name, "btl_hpam_%s", counter_names[k]);
        CHECK(open_pvar(session, name, &handles[k]), "no %s performance variable", name);
    }
}

static void counters_read(unsigned long *mine)
{
    memset(mine, 0, sizeof(unsigned long) * ncounters);
    for (int k = 0; use_pvars && k < ncounters; ++k)
        CHECK(MPI_T_pvar_read(session, handles[k], &mine[k]) == MPI_SUCCESS, "read %s",
              counter_names[k]);
}

/* The counters summed over all ranks, on rank 0. */
static void counters_sum(unsigned long *sum)
{
    unsigned long mine[ncounters];
    counters_read(mine);
    MPI_Reduce(mine, sum, ncounters, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
}

static void counters_close(void)
{
    if (!use_pvars) return;
    for (int k = 0; k < ncounters; ++k) MPI_T_pvar_handle_free(session, &handles[k]);
    MPI_T_pvar_session_free(&session);
}

/* ---- this job's shared segments --------------------------------------- */

/* "hpam-UID-JOB-HASH-" of a segment this process maps: every segment of
 * the job (AM cards and deposit cards) starts so. */
static void job_prefix(char *out, size_t len)
{
    char line[512];
    out[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "open /proc/self/maps");
    while (!out[0] && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "/dev/shm/hpam-");
        if (NULL == p) continue;
        p += strlen("/dev/shm/");
        const char *q = p;
        for (int dashes = 0; *q && dashes < 4; ++q) dashes += *q == '-';
        if ((size_t) (q - p) < len) {
            memcpy(out, p, (size_t) (q - p));
            out[q - p] = 0;
        }
    }
    fclose(f);
    CHECK(out[0] != 0, "this process maps no hpam segment");
}

/* How many segments of the job there are, and their bytes in *bytes. */
static int count_segments(const char *prefix, long long *bytes)
{
    int n = 0;
    *bytes = 0;
    DIR *d = opendir("/dev/shm");
    CHECK(d != NULL, "open /dev/shm");
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, strlen(prefix))) continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "/dev/shm/%s", e->d_name);
        if (!stat(path, &st)) *bytes += st.st_size;
        n++;
    }
    closedir(d);
    return n;
}

/* Whether [p, p + n) lies in a mapping of an hpam segment of this process:
 * card memory. */
static int in_card_memory(const void *p, size_t n)
{
    char line[512];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "open /proc/self/maps");
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (NULL == strstr(line, "/dev/shm/hpam-") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        found = (unsigned long) p >= lo && (unsigned long) p + n <= hi;
    }
    fclose(f);
    return found;
}

/* ---- traffic ------------------------------------------------------------ */

static const int p2p_sizes[] = {0, 1, 64, 1000, 4095, 4096, 12289, 65537, 262151};
enum { np2p = sizeof p2p_sizes / sizeof p2p_sizes[0], p2p_max = 262151 };
static const int rma_sizes[] = {0, 8, 1000, 4096, 8216, 16384};
enum { nrma = sizeof rma_sizes / sizeof rma_sizes[0], slot = 16384 };
static const int window_sizes[] = {0, 100, 4096, 65536};

/* What one rank did; the final table prints it per rank and in all. */
typedef struct totals {
    long sent, sent_bytes;        /* point-to-point messages and bytes sent */
    long checked, checked_bytes;  /* point-to-point messages received, every byte checked */
    long puts, gets, accumulates; /* RMA operations issued */
    long rma_bytes;               /* bytes put or got by RMA, every byte checked */
    long windows;                 /* short-lived windows made, used and freed */
    long allocated;               /* of them by MPI_Win_allocate */
    long card;                    /* of those in card memory */
} totals_t;
enum { ntotals = sizeof(totals_t) / sizeof(long) };

static unsigned char **buffers(size_t bytes)
{
    unsigned char **b = malloc(sizeof *b * (size_t) size);
    for (int p = 0; p < size; ++p) b[p] = malloc(bytes);
    return b;
}

static void p2p_round(int round, unsigned char **out, unsigned char **in, totals_t *t)
{
    const int n = p2p_sizes[round % np2p], tag = round % 32768;
    MPI_Request req[2 * size];
    MPI_Status st[2 * size];
    int k = 0;
    for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        memset(in[p], 0xEE, (size_t) n + 1);
        MPI_Irecv(in[p], n + 1, MPI_BYTE, p, tag, MPI_COMM_WORLD, &req[k++]);
    }
    for (int p = 0; p < size; ++p) {
        if (p == rank) continue;
        fill_pattern(out[p], (size_t) n, rank, p, tag);
        MPI_Isend(out[p], n, MPI_BYTE, p, tag, MPI_COMM_WORLD, &req[k++]);
        t->sent++;
        t->sent_bytes += n;
    }
    MPI_Waitall(k, req, st);
    for (int p = 0, i = 0; p < size; ++p) {
        if (p == rank) continue;
        int got;
        MPI_Get_count(&st[i++], MPI_BYTE, &got);
        CHECK(got == n, "round %d: %d bytes from rank %d, want %d", round, got, p, n);
        const size_t bad = check_pattern(in[p], (size_t) n, p, rank, tag);
        CHECK(bad == (size_t) n && in[p][n] == 0xEE, "round %d: byte %zu of %d from rank %d wrong",
              round, bad, n, p);
        t->checked++;
        t->checked_bytes += n;
    }
}

/* Window layout: `size` slots of `slot` bytes, then one long counter. */
static void rma_round(int round, MPI_Win win, unsigned char *base, unsigned char **out,
                      unsigned char **back, totals_t *t)
{
    const int n = rma_sizes[round % nrma], tag = round % 32768;
    const MPI_Aint counter = (MPI_Aint) size * slot;
    const long one = 1;
    for (int p = 0; p < size; ++p) {
        fill_pattern(out[p], (size_t) n, rank, p, tag);
        MPI_Put(out[p], n, MPI_BYTE, p, (MPI_Aint) rank * slot, n, MPI_BYTE, win);
        MPI_Accumulate(&one, 1, MPI_LONG, p, counter, 1, MPI_LONG, MPI_SUM, win);
    }
    t->puts += size;
    t->accumulates += size;
    MPI_Win_fence(0, win);
    for (int p = 0; p < size; ++p) {
        const size_t bad = check_pattern(base + (size_t) p * slot, (size_t) n, p, rank, tag);
        CHECK(bad == (size_t) n, "round %d: byte %zu of the %d put by rank %d wrong", round, bad, n, p);
        t->rma_bytes += n;
    }
    long c;
    memcpy(&c, base + counter, sizeof c);
    CHECK(c == (long) (round + 1) * size, "round %d: counter %ld, want %ld", round, c,
          (long) (round + 1) * size);
    for (int p = 0; p < size; ++p) {
        memset(back[p], 0xEE, (size_t) n);
        MPI_Get(back[p], n, MPI_BYTE, p, (MPI_Aint) rank * slot, n, MPI_BYTE, win);
    }
    t->gets += size;
    MPI_Win_fence(0, win);
    for (int p = 0; p < size; ++p) {
        const size_t bad = check_pattern(back[p], (size_t) n, rank, p, tag);
        CHECK(bad == (size_t) n, "round %d: byte %zu of the %d got from rank %d wrong", round, bad, n, p);
        t->rma_bytes += n;
    }
}

/* A window that lives for one put: its registration (or its allocation)
 * must be given back. By MPI_Win_create over malloc'd memory or, with
 * `allocate`, by MPI_Win_allocate; card: an allocated window must lie in
 * card memory. */
static void short_window(int round, int every, int allocate, int card, totals_t *t)
{
    const int n = window_sizes[(round / every) % 4], tag = round % 32768;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *mem = NULL, *src = malloc((size_t) n + 1);
    MPI_Win w;
    if (allocate) {
        MPI_Win_allocate(n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w);
        const int in_card = n > 0 && in_card_memory(mem, (size_t) n);
        CHECK(!card || n == 0 || in_card, "round %d: a window of %d bytes allocated at %p, not in "
              "card memory", round, n, (void *) mem);
        t->allocated++;
        t->card += in_card;
    } else {
        mem = malloc((size_t) n + 1);
        MPI_Win_create(mem, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    }
    MPI_Win_fence(0, w);
    fill_pattern(src, (size_t) n, rank, right, tag);
    MPI_Put(src, n, MPI_BYTE, right, 0, n, MPI_BYTE, w);
    MPI_Win_fence(0, w);
    const size_t bad = check_pattern(mem, (size_t) n, left, rank, tag);
    CHECK(bad == (size_t) n, "round %d: byte %zu of %d in a short window wrong", round, bad, n);
    t->puts++;
    t->rma_bytes += n;
    t->windows++;
    MPI_Win_free(&w);
    if (!allocate) free(mem);
    free(src);
}

/* ---- samples ------------------------------------------------------------ */

enum { max_samples = 4096, max_ranks = 16 };
typedef struct sample {
    double t;
    long rss[max_ranks];
    int segments;
    long long segment_bytes;
} sample_t;
static sample_t samples[max_samples];
static int nsamples;

static void take_sample(double t, const char *prefix, const totals_t *mine, unsigned long *sum)
{
    long rss = rss_kib(), mt[2] = {mine->checked, mine->checked_bytes + mine->rma_bytes}, all[2];
    sample_t *s = &samples[nsamples < max_samples ? nsamples : max_samples - 1];
    MPI_Gather(&rss, 1, MPI_LONG, s->rss, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Reduce(mt, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    counters_sum(sum);
    if (rank != 0) return;
    s->t = t;
    s->segments = count_segments(prefix, &s->segment_bytes);
    if (nsamples < max_samples) ++nsamples;
    printf("mpi_soak: %6.1f s: %ld messages, %ld bytes checked; rss KiB", t, all[0], all[1]);
    for (int p = 0; p < size; ++p) printf(" %ld", s->rss[p]);
    printf("; %d segments; retransmissions %lu, wire dropped %lu\n", s->segments,
           sum[c_retrans], sum[c_dropped]);
    fflush(stdout);
}

/* Rank 0: resident memory and segments flat after the warm-up. */
static void check_flat(double seconds, double growth_percent)
{
    int w = 0;
    while (w + 1 < nsamples && samples[w].t < seconds / 4) ++w;
    CHECK(nsamples - w >= 2, "only %d samples after the warm-up", nsamples - w);
    const sample_t *base = &samples[w], *last = &samples[nsamples - 1];
    for (int p = 0; p < size; ++p) {
        long peak = 0;
        for (int i = w; i < nsamples; ++i) peak = samples[i].rss[p] > peak ? samples[i].rss[p] : peak;
        printf("mpi_soak: rank %d rss %ld KiB at start, %ld after warm-up (%.0f s), %ld at the end, "
               "%ld at most\n", p, samples[0].rss[p], base->rss[p], base->t, last->rss[p], peak);
        CHECK(peak <= base->rss[p] * (1 + growth_percent / 100), "rank %d: rss grew from %ld to "
              "%ld KiB after the warm-up (more than %.0f %%)", p, base->rss[p], peak, growth_percent);
    }
    for (int i = w; i < nsamples; ++i)
        CHECK(samples[i].segments == base->segments &&
                  samples[i].segment_bytes == base->segment_bytes,
              "%d segments of %lld bytes at %.0f s, %d of %lld after the warm-up",
              samples[i].segments, samples[i].segment_bytes, samples[i].t, base->segments,
              base->segment_bytes);
    printf("mpi_soak: segments %d (%lld bytes) at start, %d (%lld bytes) at the end\n",
           samples[0].segments, samples[0].segment_bytes, last->segments, last->segment_bytes);
}

/* ---- the final table ---------------------------------------------------- */

static void print_traffic_row(const char *who, const totals_t *t, long windows)
{
    printf("mpi_soak: %5s %10ld %14ld %10ld %14ld %9ld %9ld %9ld %14ld %8ld\n", who, t->sent,
           t->sent_bytes, t->checked, t->checked_bytes, t->puts, t->gets, t->accumulates,
           t->rma_bytes, windows);
}

static void print_transport_row(const char *who, const unsigned long *c, long rss0, long rss1)
{
    const unsigned long injected = c[c_dropped] + c[c_duplicated] + c[c_corrupted] + c[c_reordered];
    printf("mpi_soak: %5s %10lu %10lu %10lu %10lu %10lu %10ld %10ld\n", who, c[c_requests],
           c[c_retrans], injected, c[c_crc], c[c_overflow], rss0, rss1);
}

/* Every rank's totals and transport counters (MPI_T pvars) to rank 0,
 * which prints them per rank and in all, with each rank's resident memory
 * at the first and the last sample. The job's messages sent must all have
 * been received and checked. */
static void print_totals(double t, int rounds, const totals_t *mine)
{
    totals_t each[max_ranks], all = {0};
    unsigned long mine_c[ncounters], c[max_ranks][ncounters], all_c[ncounters] = {0};
    counters_read(mine_c);
    MPI_Gather(mine, ntotals, MPI_LONG, each, ntotals, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Gather(mine_c, ncounters, MPI_UNSIGNED_LONG, c, ncounters, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    const sample_t *first = &samples[0], *last = &samples[nsamples - 1];
    long rss0 = 0, rss1 = 0;
    printf("mpi_soak: totals after %.1f s, %d rounds, %d ranks\n", t, rounds, size);
    printf("mpi_soak:  rank  msgs sent     bytes sent msgs chckd  bytes checked      puts      gets"
           "      accs      RMA bytes  windows\n");
    for (int p = 0; p < size; ++p) {
        char who[16];
        snprintf(who, sizeof who, "%d", p);
        print_traffic_row(who, &each[p], each[p].windows);
        long *a = (long *) &all;
        for (int k = 0; k < ntotals; ++k) a[k] += ((const long *) &each[p])[k];
    }
    /* A window is created and freed by every rank together: count it once. */
    print_traffic_row("all", &all, each[0].windows);
    printf("mpi_soak:  rank   requests    retrans     faults  CRC fails   overflow  RSS0 KiB   "
           "RSS1 KiB\n");
    for (int p = 0; p < size; ++p) {
        char who[16];
        snprintf(who, sizeof who, "%d", p);
        print_transport_row(who, c[p], first->rss[p], last->rss[p]);
        for (int k = 0; k < ncounters; ++k) all_c[k] += c[p][k];
        rss0 += first->rss[p];
        rss1 += last->rss[p];
    }
    print_transport_row("all", all_c, rss0, rss1);
    printf("mpi_soak: (bytes: payload; RMA bytes: put or got, every byte checked; faults: packets "
           "the wire dropped, duplicated, corrupted or reordered; RSS0/RSS1: resident memory at "
           "the first and the last sample)\n");
    CHECK(all.sent == all.checked && all.sent_bytes == all.checked_bytes,
          "%ld messages (%ld bytes) sent, %ld (%ld bytes) received and checked", all.sent,
          all.sent_bytes, all.checked, all.checked_bytes);
}

static void check_counters(const unsigned long *s, int faults)
{
    printf("mpi_soak: counters: requests %lu, retransmissions %lu, timeouts %lu, wire dropped %lu, "
           "duplicated %lu, corrupted %lu, reordered %lu; CRC failures %lu, malformed %lu, key "
           "rejections %lu, overflow drops %lu, duplicates reflected %lu, stale replies %lu, held "
           "in order %lu, stream rejected %lu, busy peer waits %lu\n", s[c_requests], s[c_retrans],
           s[c_timeouts], s[c_dropped], s[c_duplicated], s[c_corrupted], s[c_reordered], s[c_crc],
           s[c_malformed], s[c_key], s[c_overflow], s[c_reflected], s[c_stale], s[c_held],
           s[c_rejected], s[c_busy]);
    CHECK(s[c_retrans] >= s[c_dropped], "%lu retransmissions for %lu packets dropped", s[c_retrans],
          s[c_dropped]);
    /* A corrupted packet is delivered once or twice (duplicated); a few
     * are dropped for want of a receive block before their CRC is seen. */
    const unsigned long detected = s[c_crc] + s[c_malformed] + s[c_key];
    CHECK(detected <= 2 * s[c_corrupted] && 2 * detected >= s[c_corrupted],
          "%lu CRC failures, %lu malformed, %lu key rejections, but %lu packets corrupted",
          s[c_crc], s[c_malformed], s[c_key], s[c_corrupted]);
    CHECK(s[c_violations] == 0, "%lu request-reply rule violations", s[c_violations]);
    if (faults)
        CHECK(s[c_dropped] && s[c_duplicated] && s[c_corrupted] && s[c_reordered] && s[c_crc],
              "a fault kind never happened (or was never detected)");
}

int main(int argc, char **argv)
{
    int provided, faults = 0, every = 16, card = 0;
    double seconds = 20, interval = 2, growth = 5;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size <= max_ranks, "needs 2 to %d ranks", max_ranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-f")) faults = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "-t")) seconds = atof(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-i")) interval = atof(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-g")) growth = atof(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-w")) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-u")) use_pvars = 0;
        else if (!strcmp(argv[i], "-c")) card = 1;
    }
    counters_open();
    unsigned char **out = buffers(p2p_max + 1), **in = buffers(p2p_max + 1);
    unsigned char **rma_out = buffers(slot), **rma_back = buffers(slot);
    unsigned char *base = calloc((size_t) size * slot + sizeof(long), 1);
    MPI_Win win;
    MPI_Win_create(base, (MPI_Aint) size * slot + (MPI_Aint) sizeof(long), 1, MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    char prefix[128] = "";
    if (rank == 0) job_prefix(prefix, sizeof prefix);
    if (rank == 0) printf("mpi_soak: segment prefix %s\n", prefix);
    CHECK(every >= 1, "-w %d: a short-lived window every 1 or more rounds", every);
    totals_t mine = {0};
    unsigned long sum[ncounters];
    const double start = now_s();
    double next_sample = 0;
    int round = 0;
    for (;; ++round) {
        p2p_round(round, out, in, &mine);
        rma_round(round, win, base, rma_out, rma_back, &mine);
        if (round % every == every - 1)
            short_window(round, every, (round / every / 4) % 2, card, &mine);
        /* Rank 0's clock decides for everyone: 0 go on, 1 sample, 2 sample and stop. */
        int what = 0;
        if (rank == 0) {
            const double t = now_s() - start;
            what = t >= seconds ? 2 : t >= next_sample ? 1 : 0;
        }
        MPI_Bcast(&what, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (what == 0) continue;
        take_sample(now_s() - start, prefix, &mine, sum);
        next_sample += interval;
        if (what == 2) break;
    }
    MPI_Win_free(&win);
    print_totals(now_s() - start, round + 1, &mine);
    if (rank == 0) {
        printf("mpi_soak: short-lived windows: %ld made, used and freed, %ld of them by "
               "MPI_Win_allocate (%ld in card memory)\n", mine.windows, mine.allocated, mine.card);
        CHECK(!card || mine.card > 0, "no allocated window was in card memory");
        check_flat(seconds, growth);
        if (use_pvars) check_counters(sum, faults);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_soak: ok\n");
    counters_close();
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
