/*
 * matmul.c — blocked matrix multiply C = A B of order n in blocks of b x b,
 * the blocks of A, B and C dealt cyclically over the processors (spread
 * arrays whose elements are whole blocks). Each processor computes its C
 * blocks; for C(i,j) it walks k, fetching A(i,k) and B(k,j) with bulk gets
 * when they are remote, the next pair in flight while the current one is
 * multiplied (double buffering). Entries are small integers, so every
 * product is exact: each C entry is checked against a serial dot product of
 * the regenerated row and column.
 *
 *   matmul [--n order] [--block b] [--seed s] [--break 0|1]
 */
#include "app_common.h"

#define APP "matmul"

typedef struct mm {
  int me, procs;
  uint64_t n, b, nb, seed;
  splitc_spread_t a, bm, c; /* nb * nb blocks each, cyclic */
  double* buf[2][2];         /* [slot][A or B] remote blocks in flight */
  double comm, compute;      /* seconds issuing and waiting for gets / in block products */
} mm_t;

static double entry(uint64_t seed, uint64_t stream, uint64_t n, uint64_t r, uint64_t c) {
  return (double)((int)(app_rand(seed, stream, r * n + c) % 7) - 3);
}

/* Fills my blocks of one matrix (stream 30: A, 31: B). */
static void generate(mm_t* m, splitc_spread_t* s, uint64_t stream) {
  const uint64_t bb = m->b * m->b, mine = splitc_spread_local_count(s, m->me);
  for (uint64_t k = 0; k < mine; ++k) {
    const uint64_t blk = splitc_spread_global_index(s, m->me, k);
    const uint64_t bi = blk / m->nb, bj = blk % m->nb;
    double* d = (double*)s->local + k * bb;
    for (uint64_t r = 0; r < m->b; ++r)
      for (uint64_t c = 0; c < m->b; ++c)
        d[r * m->b + c] = entry(m->seed, stream, m->n, bi * m->b + r, bj * m->b + c);
  }
}

/* The block of s at (i, j): a pointer to it if local, else a bulk get into buf. */
static const double* fetch(mm_t* m, const splitc_spread_t* s, uint64_t i, uint64_t j, double* buf) {
  const splitc_gptr_t g = splitc_spread_at(s, i * m->nb + j);
  const double* local = (const double*)splitc_tolocal(g);
  if (local) return local;
  splitc_bulk_get(buf, g, m->b * m->b * sizeof(double));
  return buf;
}

static void block_product(uint64_t b, const double* x, const double* y, double* z) {
  for (uint64_t r = 0; r < b; ++r)
    for (uint64_t k = 0; k < b; ++k) {
      const double xr = x[r * b + k];
      for (uint64_t c = 0; c < b; ++c) z[r * b + c] += xr * y[k * b + c];
    }
}

static void multiply(mm_t* m) {
  const uint64_t mine = splitc_spread_local_count(&m->c, m->me);
  for (uint64_t k = 0; k < mine; ++k) {
    const uint64_t blk = splitc_spread_global_index(&m->c, m->me, k);
    const uint64_t i = blk / m->nb, j = blk % m->nb;
    double* z = (double*)m->c.local + k * m->b * m->b;
    double t = splitc_wtime();
    const double* x = fetch(m, &m->a, i, 0, m->buf[0][0]);
    const double* y = fetch(m, &m->bm, 0, j, m->buf[0][1]);
    for (uint64_t kk = 0; kk < m->nb; ++kk) {
      splitc_sync(); /* x and y have arrived */
      const double *nx = NULL, *ny = NULL;
      if (kk + 1 < m->nb) {
        nx = fetch(m, &m->a, i, kk + 1, m->buf[(kk + 1) % 2][0]);
        ny = fetch(m, &m->bm, kk + 1, j, m->buf[(kk + 1) % 2][1]);
      }
      const double t1 = splitc_wtime();
      m->comm += t1 - t;
      block_product(m->b, x, y, z);
      t = splitc_wtime();
      m->compute += t - t1;
      x = nx;
      y = ny;
    }
  }
}

/* Every entry of my C blocks against a serial dot product of the
 * regenerated row of A and column of B. */
static int check(const mm_t* m, char* why, size_t why_len) {
  const uint64_t mine = splitc_spread_local_count(&m->c, m->me), n = m->n, b = m->b;
  double* rows = (double*)malloc(b * n * sizeof(double)); /* rows[r][t] = A[bi*b + r][t] */
  double* cols = (double*)malloc(b * n * sizeof(double)); /* cols[c][t] = B[t][bj*b + c] */
  int ok = rows && cols;
  for (uint64_t k = 0; ok && k < mine; ++k) {
    const uint64_t blk = splitc_spread_global_index(&m->c, m->me, k);
    const uint64_t bi = blk / m->nb, bj = blk % m->nb;
    const double* z = (const double*)m->c.local + k * b * b;
    for (uint64_t x = 0; x < b; ++x)
      for (uint64_t t = 0; t < n; ++t) {
        rows[x * n + t] = entry(m->seed, 30, n, bi * b + x, t);
        cols[x * n + t] = entry(m->seed, 31, n, t, bj * b + x);
      }
    for (uint64_t r = 0; ok && r < b; ++r)
      for (uint64_t c = 0; ok && c < b; ++c) {
        double want = 0;
        for (uint64_t t = 0; t < n; ++t) want += rows[r * n + t] * cols[c * n + t];
        if (z[r * b + c] != want) {
          snprintf(why, why_len, "C[%" PRIu64 "][%" PRIu64 "] is %.17g, the serial product has %.17g",
                   bi * b + r, bj * b + c, z[r * b + c], want);
          ok = 0;
        }
      }
  }
  free(rows);
  free(cols);
  return ok;
}

int main(int argc, char** argv) {
  app_opt_t o[] = {{"n", "order", 256, NULL},
                   {"block", "b", 32, NULL},
                   {"seed", "s", 1, NULL},
                   {"break", "0|1: spoil one entry before the check", 0, NULL}};
  if (app_parse(argc, argv, APP, o, 4)) return 2;
  mm_t m = {0};
  m.n = o[0].value;
  m.b = o[1].value;
  m.seed = o[2].value;
  if (!m.n || !m.b || m.n % m.b) {
    fprintf(stderr, APP ": --block must divide --n\n");
    return 2;
  }
  m.nb = m.n / m.b;
  const size_t block_bytes = m.b * m.b * sizeof(double);
  /* three matrices' shares (rounded up to whole blocks per processor) */
  if (splitc_init(&argc, &argv, 3 * (m.nb * m.nb + 1) * block_bytes + (1u << 20)) != SPLITC_OK)
    return 1;
  m.me = splitc_my_proc();
  m.procs = splitc_procs();
  int ok = 1;
  if (splitc_spread_alloc(&m.a, m.nb * m.nb, block_bytes, SPLITC_CYCLIC) ||
      splitc_spread_alloc(&m.bm, m.nb * m.nb, block_bytes, SPLITC_CYCLIC) ||
      splitc_spread_alloc(&m.c, m.nb * m.nb, block_bytes, SPLITC_CYCLIC))
    return app_finish(APP, 0, "out of memory");
  for (int s = 0; s < 2; ++s)
    for (int x = 0; x < 2; ++x) m.buf[s][x] = (double*)malloc(block_bytes);
  generate(&m, &m.a, 30);
  generate(&m, &m.bm, 31);
  const double t0 = app_phase_begin();
  multiply(&m);
  app_phase_end(APP, "multiply", t0);
  double parts[2] = {m.comm, m.compute};
  splitc_all_reduce(parts, 2, SPLITC_DOUBLE, SPLITC_MAX);
  if (m.me == 0) printf("phase,%s,multiply.get_max,%.6f\nphase,%s,multiply.compute_max,%.6f\n",
                        APP, parts[0], APP, parts[1]);
  if (o[3].value && splitc_spread_local_count(&m.c, m.me)) ((double*)m.c.local)[0] += 1;
  ok = check(&m, app_why, sizeof app_why);
  return app_finish(APP, ok, app_why);
}
