/*
 * radix_sort.c — the Split-C radix sort HP-LAM ran for its Table 4.3.
 *
 * N = n * P 32-bit keys in a blocked spread array; passes over `bits`-bit
 * digits (16 bits: two passes, as in the paper). Each pass:
 *   fill       local histogram of the digit;
 *   wave-scan  the global prefix of the histograms, processor by processor:
 *              processor p receives (signaling stores, store_sync) the
 *              counts of processors 0..p-1 chunk by chunk, adds its own and
 *              stores them on to p+1; the last processor turns the totals
 *              into each bucket's first position and stores them to all;
 *   coalesce   every key stored (splitc_store_u32, one word each) to its
 *              position in the destination array, then all_store_sync.
 * Prints the phase table in Table 4.3's layout beside the paper's rows and
 * checks the result (sort_check.h).
 *
 *   radix_sort [--n keys-per-processor] [--seed s] [--bits 8|16] [--chunk buckets]
 *              [--serial 0|1] [--break 0|1]
 */
#include "sort_check.h"

#define APP "radix_sort"

typedef struct radix {
  uint64_t n, buckets, chunk;
  unsigned bits;
  splitc_spread_t keys[2]; /* source and destination of a pass, blocked */
  uint64_t* hist;          /* my count per bucket                             */
  uint64_t* wave;          /* symmetric: counts of processors before me       */
  uint64_t* base;          /* symmetric: first global position of each bucket */
  uint64_t* acc;           /* wave + hist, what I store on (read until quiesced) */
  uint64_t* first;         /* last processor: bucket bases it stores to all   */
  uint64_t* offset;        /* next global position for my keys, per bucket    */
} radix_t;

static uint32_t digit(uint32_t key, unsigned shift, uint64_t mask) {
  return (uint32_t)((key >> shift) & mask);
}

static void fill(radix_t* r, const uint32_t* keys, unsigned shift) {
  memset(r->hist, 0, r->buckets * sizeof *r->hist);
  for (uint64_t i = 0; i < r->n; ++i) r->hist[digit(keys[i], shift, r->buckets - 1)]++;
}

/* The last processor: running bucket bases of chunk [lo, lo + chunk). */
static uint64_t first_positions(radix_t* r, uint64_t lo, uint64_t running) {
  for (uint64_t b = lo; b < lo + r->chunk; ++b) {
    r->first[b] = running;
    running += r->acc[b];
  }
  return running;
}

static void wave_scan(radix_t* r) {
  const int me = splitc_my_proc(), p = splitc_procs();
  const size_t bytes = r->chunk * sizeof(uint64_t);
  uint64_t running = 0;
  for (uint64_t lo = 0; lo < r->buckets; lo += r->chunk) {
    if (me > 0) splitc_store_sync(bytes); /* wave[lo, lo + chunk) from me - 1 */
    for (uint64_t b = lo; b < lo + r->chunk; ++b) r->acc[b] = r->wave[b] + r->hist[b];
    if (me < p - 1)
      splitc_bulk_store(splitc_toglobal(me + 1, r->wave + lo), r->acc + lo, bytes);
    else
      running = first_positions(r, lo, running);
  }
  /* Every wave byte has been consumed before the last processor stores the
   * bases (it has the last chunk only after all others forwarded theirs),
   * so store_sync below counts base bytes only. */
  if (me == p - 1)
    for (int q = 0; q < p; ++q)
      splitc_bulk_store(splitc_toglobal(q, r->base), r->first, r->buckets * sizeof(uint64_t));
  splitc_store_sync(r->buckets * sizeof(uint64_t));
  for (uint64_t b = 0; b < r->buckets; ++b) r->offset[b] = r->base[b] + r->wave[b];
}

static void coalesce(radix_t* r, const uint32_t* keys, const splitc_spread_t* dst, unsigned shift) {
  for (uint64_t i = 0; i < r->n; ++i) {
    const uint32_t k = keys[i];
    splitc_store_u32(splitc_spread_at(dst, r->offset[digit(k, shift, r->buckets - 1)]++), k);
  }
  splitc_all_store_sync();
}

static int setup(radix_t* r, uint64_t seed) {
  const int p = splitc_procs(), me = splitc_my_proc();
  if (splitc_spread_alloc(&r->keys[0], r->n * (uint64_t)p, 4, SPLITC_BLOCKED) ||
      splitc_spread_alloc(&r->keys[1], r->n * (uint64_t)p, 4, SPLITC_BLOCKED))
    return -1;
  r->wave = (uint64_t*)splitc_all_alloc(r->buckets * sizeof(uint64_t));
  r->base = (uint64_t*)splitc_all_alloc(r->buckets * sizeof(uint64_t));
  r->hist = (uint64_t*)calloc(r->buckets, sizeof(uint64_t));
  r->acc = (uint64_t*)calloc(r->buckets, sizeof(uint64_t));
  r->first = (uint64_t*)calloc(r->buckets, sizeof(uint64_t));
  r->offset = (uint64_t*)calloc(r->buckets, sizeof(uint64_t));
  if (!r->wave || !r->base || !r->hist || !r->acc || !r->first || !r->offset) return -1;
  uint32_t* k = (uint32_t*)r->keys[0].local;
  for (uint64_t i = 0; i < r->n; ++i) k[i] = sort_key(seed, (uint64_t)me * r->n + i);
  return 0;
}

/* Table 4.3's layout: our phases beside the paper's three platforms. */
static void print_table(const radix_t* r, double (*t)[3], unsigned passes) {
  static const double paper[2][3][3] = {{{0.14, 0.56, 0.13}, {1.04, 0.88, 0.95}, {9.84, 8.99, 7.78}},
                                        {{0.12, 0.25, 0.09}, {1.03, 0.80, 0.93}, {0.65, 1.18, 0.27}}};
  static const char* names[3] = {"Fill", "Wave-scan", "Coalesce"};
  printf("\nradix sort: %" PRIu64 " keys (%" PRIu64 " per processor, %d processors), %u-bit digits\n",
         r->n * (uint64_t)splitc_procs(), r->n, splitc_procs(), r->bits);
  printf("%-8s %-16s %10s %8s %14s %16s\n", "", "", "ours", "HP-LAM", "Sun-LAM SS-20", "Sun-LAM Ultra-1");
  double total = 0;
  for (unsigned pass = 0; pass < passes; ++pass)
    for (int ph = 0; ph < 3; ++ph) {
      char label[16];
      snprintf(label, sizeof label, "%s (sec)", names[ph]);
      char pass_label[16] = "";
      if (ph == 0) snprintf(pass_label, sizeof pass_label, "Pass %u", pass + 1);
      printf("%-8s %-16s %10.4f", pass_label, label, t[pass][ph]);
      if (pass < 2)
        printf(" %8.2f %14.2f %16.2f\n", paper[pass][ph][0], paper[pass][ph][1], paper[pass][ph][2]);
      else
        printf("\n");
      total += t[pass][ph];
    }
  printf("%-25s %10.4f %8.2f %14.2f %16.2f\n\n", "TOTAL (sec)", total, 12.82, 12.66, 10.14);
}

int main(int argc, char** argv) {
  app_opt_t o[] = {{"n", "keys-per-processor", 1 << 16, NULL}, {"seed", "s", 1, NULL},
                   {"bits", "8|16", 16, NULL},      {"chunk", "buckets-per-store", 4096, NULL},
                   {"serial", "0|1 (default: 1 up to 4M keys)", 2, NULL},
                   {"break", "0|1: swap two keys before the check", 0, NULL}};
  radix_t r = {0};
  if (app_parse(argc, argv, APP, o, 6)) return 2;
  r.n = o[0].value;
  r.bits = (unsigned)o[2].value;
  r.buckets = 1ull << (r.bits & 31);
  r.chunk = o[3].value < r.buckets ? o[3].value : r.buckets;
  if ((r.bits != 8 && r.bits != 16) || !r.chunk || r.buckets % r.chunk) {
    fprintf(stderr, APP ": --bits must be 8 or 16 and --chunk divide 2^bits\n");
    return 2;
  }
  /* two key arrays and two bucket arrays, and room for alignment */
  if (splitc_init(&argc, &argv, 2 * r.n * 4 + 2 * r.buckets * 8 + (1 << 20)) != SPLITC_OK) return 1;
  int ok = 1;
  if (setup(&r, o[1].value)) return app_finish(APP, 0, "out of memory");
  uint64_t before[3];
  sort_fingerprint((const uint32_t*)r.keys[0].local, r.n, before);
  const unsigned passes = 32 / r.bits;
  double t[4][3];
  for (unsigned pass = 0; pass < passes; ++pass) {
    const unsigned shift = pass * r.bits;
    const splitc_spread_t* src = &r.keys[pass % 2];
    const splitc_spread_t* dst = &r.keys[(pass + 1) % 2];
    char name[32];
    double t0 = app_phase_begin();
    fill(&r, (const uint32_t*)src->local, shift);
    snprintf(name, sizeof name, "pass%u_fill", pass + 1);
    t[pass][0] = app_phase_end(APP, name, t0);
    t0 = app_phase_begin();
    wave_scan(&r);
    snprintf(name, sizeof name, "pass%u_wave_scan", pass + 1);
    t[pass][1] = app_phase_end(APP, name, t0);
    t0 = app_phase_begin();
    coalesce(&r, (const uint32_t*)src->local, dst, shift);
    snprintf(name, sizeof name, "pass%u_coalesce", pass + 1);
    t[pass][2] = app_phase_end(APP, name, t0);
  }
  const uint64_t total = r.n * (uint64_t)splitc_procs();
  const int serial = o[4].value == 2 ? total <= (1u << 22) : (int)o[4].value;
  uint32_t* sorted = (uint32_t*)r.keys[passes % 2].local;
  if (o[5].value) sort_spoil(sorted, r.n);
  ok = sort_verify(sorted, r.n, before, o[1].value, total, serial, app_why, sizeof app_why);
  if (splitc_my_proc() == 0) print_table(&r, t, passes);
  return app_finish(APP, ok, app_why);
}
