/*
 * sample_sort.c — Split-C sample sort: splitters from a sample, buckets
 * moved by bulk stores.
 *
 *   sample     every processor bulk-stores `oversample` of its keys to every
 *              processor; all sort the P * oversample samples the same way
 *              and take every oversample-th as the P - 1 splitters;
 *   partition  each processor counts its keys per destination and orders
 *              them by destination (a local counting sort);
 *   counts     every processor bulk-stores its row of counts to all, so each
 *              knows the whole P x P matrix: how much it receives and where
 *              its bucket lands at every destination;
 *   coalesce   one bulk store per destination, then all_store_sync;
 *   local sort of what arrived.
 * Checks the result (sort_check.h).
 *
 *   sample_sort [--n keys-per-processor] [--seed s] [--oversample k] [--serial 0|1]
 *               [--break 0|1]
 */
#include "sort_check.h"

#define APP "sample_sort"

typedef struct sample {
  int me, procs;
  uint64_t n, over;
  uint32_t* keys;       /* my input                                    */
  uint32_t* samples;    /* symmetric: procs * over                     */
  uint32_t* splitters;  /* procs - 1                                   */
  uint32_t* ordered;    /* my keys ordered by destination              */
  uint64_t* matrix;     /* symmetric: matrix[p * procs + d] keys p -> d */
  uint64_t* start;      /* where destination d's keys begin in ordered */
  uint32_t* received;   /* symmetric, allocated once the matrix is known */
  uint64_t received_n;
} sample_t;

static void take_sample(sample_t* s, uint64_t seed) {
  uint32_t* mine = (uint32_t*)malloc(s->over * sizeof *mine);
  for (uint64_t j = 0; j < s->over; ++j)
    mine[j] = s->keys[app_rand(seed, 2, (uint64_t)s->me * s->over + j) % s->n];
  for (int d = 0; d < s->procs; ++d)
    splitc_bulk_store(splitc_toglobal(d, s->samples + (uint64_t)s->me * s->over), mine,
                      s->over * sizeof *mine);
  splitc_all_store_sync();
  free(mine);
  qsort(s->samples, (size_t)s->procs * s->over, sizeof(uint32_t), sort_cmp_u32);
  for (int i = 0; i + 1 < s->procs; ++i) s->splitters[i] = s->samples[(uint64_t)(i + 1) * s->over];
}

/* Destination of a key: the number of splitters at or below it. */
static int destination(const sample_t* s, uint32_t key) {
  int lo = 0, hi = s->procs - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (s->splitters[mid] <= key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void partition(sample_t* s) {
  uint64_t* row = s->matrix + (uint64_t)s->me * (uint64_t)s->procs;
  uint64_t* next = (uint64_t*)calloc((size_t)s->procs, sizeof *next);
  for (uint64_t i = 0; i < s->n; ++i) row[destination(s, s->keys[i])]++;
  for (int d = 1; d < s->procs; ++d) s->start[d] = s->start[d - 1] + row[d - 1];
  memcpy(next, s->start, (size_t)s->procs * sizeof *next);
  for (uint64_t i = 0; i < s->n; ++i) s->ordered[next[destination(s, s->keys[i])]++] = s->keys[i];
  free(next);
}

static void exchange_counts(sample_t* s) {
  const uint64_t* row = s->matrix + (uint64_t)s->me * (uint64_t)s->procs;
  for (int d = 0; d < s->procs; ++d)
    if (d != s->me)
      splitc_bulk_store(splitc_toglobal(d, row), row, (size_t)s->procs * sizeof *row);
  splitc_all_store_sync();
}

/* Allocates the receive area (collective: the largest share anywhere) and
 * stores my bucket for each destination at its place there. */
static int coalesce(sample_t* s) {
  const uint64_t p = (uint64_t)s->procs;
  uint64_t most = 0;
  for (uint64_t d = 0; d < p; ++d) {
    uint64_t in = 0;
    for (uint64_t q = 0; q < p; ++q) in += s->matrix[q * p + d];
    if (in > most) most = in;
    if ((int)d == s->me) s->received_n = in;
  }
  s->received = (uint32_t*)splitc_all_alloc((most ? most : 1) * sizeof(uint32_t));
  if (!s->received) return -1;
  for (uint64_t d = 0; d < p; ++d) {
    uint64_t at = 0;
    for (uint64_t q = 0; q < (uint64_t)s->me; ++q) at += s->matrix[q * p + d];
    const uint64_t count = s->matrix[(uint64_t)s->me * p + d];
    if (count)
      splitc_bulk_store(splitc_toglobal((int)d, s->received + at), s->ordered + s->start[d],
                        count * sizeof(uint32_t));
  }
  splitc_all_store_sync();
  return 0;
}

static int setup(sample_t* s, uint64_t seed) {
  const uint64_t p = (uint64_t)s->procs;
  s->samples = (uint32_t*)splitc_all_alloc(p * s->over * sizeof(uint32_t));
  s->matrix = (uint64_t*)splitc_all_alloc(p * p * sizeof(uint64_t));
  s->keys = (uint32_t*)malloc(s->n * sizeof(uint32_t));
  s->ordered = (uint32_t*)malloc(s->n * sizeof(uint32_t));
  s->splitters = (uint32_t*)calloc(p, sizeof(uint32_t));
  s->start = (uint64_t*)calloc(p, sizeof(uint64_t));
  if (!s->samples || !s->matrix || !s->keys || !s->ordered || !s->splitters || !s->start) return -1;
  for (uint64_t i = 0; i < s->n; ++i) s->keys[i] = sort_key(seed, (uint64_t)s->me * s->n + i);
  return 0;
}

int main(int argc, char** argv) {
  app_opt_t o[] = {{"n", "keys-per-processor", 1 << 16, NULL},
                   {"seed", "s", 1, NULL},
                   {"oversample", "k", 64, NULL},
                   {"serial", "0|1 (default: 1 up to 4M keys)", 2, NULL},
                   {"break", "0|1: swap two keys before the check", 0, NULL}};
  if (app_parse(argc, argv, APP, o, 5)) return 2;
  sample_t s = {0};
  s.n = o[0].value;
  s.over = o[2].value;
  if (!s.n || !s.over) {
    fprintf(stderr, APP ": --n and --oversample must be positive\n");
    return 2;
  }
  /* the receive area: four times the average share, far above what a
   * sample of 64 per processor lets through (all_alloc names a shortfall) */
  if (splitc_init(&argc, &argv, 4 * s.n * sizeof(uint32_t) + (8u << 20)) != SPLITC_OK) return 1;
  s.me = splitc_my_proc();
  s.procs = splitc_procs();
  int ok = 1;
  if (setup(&s, o[1].value)) return app_finish(APP, 0, "out of memory");
  uint64_t before[3];
  sort_fingerprint(s.keys, s.n, before);
  double t0 = app_phase_begin();
  take_sample(&s, o[1].value);
  app_phase_end(APP, "sample", t0);
  t0 = app_phase_begin();
  partition(&s);
  app_phase_end(APP, "partition", t0);
  t0 = app_phase_begin();
  exchange_counts(&s);
  app_phase_end(APP, "counts", t0);
  t0 = app_phase_begin();
  if (coalesce(&s)) return app_finish(APP, 0, "out of memory for the received keys");
  app_phase_end(APP, "coalesce", t0);
  t0 = app_phase_begin();
  qsort(s.received, s.received_n, sizeof(uint32_t), sort_cmp_u32);
  app_phase_end(APP, "local_sort", t0);
  const uint64_t total = s.n * (uint64_t)s.procs;
  const int serial = o[3].value == 2 ? total <= (1u << 22) : (int)o[3].value;
  if (o[4].value) sort_spoil(s.received, s.received_n);
  ok = sort_verify(s.received, s.received_n, before, o[1].value, total, serial, app_why,
                   sizeof app_why);
  return app_finish(APP, ok, app_why);
}
