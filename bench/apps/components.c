/*
 * components.c — connected components of a random graph by remote atomics:
 * the fine-grain atomics application.
 *
 * The vertices' parent words form a blocked spread array; a root is a vertex
 * that is its own parent, and parent[v] <= v always, so every tree's root is
 * its smallest vertex.
 *   hook      for each of my edges (u, v): find both roots (remote atomic
 *             reads, path halving by compare-and-swap); if they differ,
 *             hook the larger root under the smaller with one remote
 *             compare-and-swap on its parent word, retrying if another
 *             processor hooked it first (lock-free union-find);
 *   label     every vertex's root, by find;
 *   count     every vertex fetch-and-adds 1 to its root's size word: the
 *             old value is the vertex's rank inside its component.
 * Every processor regenerates all edges and runs a serial union-find: the
 * labels, the component sizes at the roots, and the ranks (each component's
 * ranks are 0..size-1: checked by count and sum) must match.
 *
 *   components [--n vertices-per-processor] [--edges per-processor]
 *              [--local percent] [--seed s] [--break 0|1]
 */
#include "app_common.h"

#define APP "components"

typedef struct cc {
  int me, procs;
  uint64_t n, m, local_pct, seed;
  splitc_spread_t parent, size; /* u64, blocked: n per processor */
  uint64_t* label;              /* my vertices' roots */
  uint64_t* rank;               /* my vertices' ranks in their component */
} cc_t;

static void edge(const cc_t* c, uint64_t e, uint64_t* u, uint64_t* v) {
  const uint64_t r = app_rand(c->seed, 40, e), total = c->n * (uint64_t)c->procs;
  const uint64_t owner = e / c->m;
  *u = owner * c->n + r % c->n;
  if ((r >> 24) % 100 < c->local_pct)
    *v = owner * c->n + (r >> 32) % c->n;
  else
    *v = (r >> 32) % total;
}

static uint64_t parent_of(const cc_t* c, uint64_t x) {
  uint64_t p = 0;
  splitc_atomic_read_u64(&p, splitc_spread_at(&c->parent, x));
  return p;
}

/* The root of x, halving the path on the way (parent[x] := grandparent,
 * by CAS so a concurrent hook is never undone). */
static uint64_t find(const cc_t* c, uint64_t x) {
  for (;;) {
    const uint64_t p = parent_of(c, x);
    if (p == x) return x;
    const uint64_t gp = parent_of(c, p);
    if (gp == p) return p;
    uint64_t old;
    splitc_cas_u64(&old, splitc_spread_at(&c->parent, x), p, gp);
    x = gp;
  }
}

static void unite(const cc_t* c, uint64_t u, uint64_t v) {
  for (;;) {
    const uint64_t ru = find(c, u), rv = find(c, v);
    if (ru == rv) return;
    const uint64_t hi = ru > rv ? ru : rv, lo = ru > rv ? rv : ru;
    uint64_t old;
    splitc_cas_u64(&old, splitc_spread_at(&c->parent, hi), hi, lo);
    if (old == hi) return;
  }
}

static void hook(const cc_t* c) {
  for (uint64_t e = (uint64_t)c->me * c->m; e < (uint64_t)(c->me + 1) * c->m; ++e) {
    uint64_t u, v;
    edge(c, e, &u, &v);
    unite(c, u, v);
  }
}

static void label(const cc_t* c) {
  for (uint64_t i = 0; i < c->n; ++i) c->label[i] = find(c, (uint64_t)c->me * c->n + i);
}

static void count(const cc_t* c) {
  for (uint64_t i = 0; i < c->n; ++i)
    splitc_fetch_add_u64(&c->rank[i], splitc_spread_at(&c->size, c->label[i]), 1);
}

/* Serial union-find over every edge: the smallest vertex of each component. */
static uint64_t serial_root(uint64_t* up, uint64_t x) {
  while (up[x] != x) x = up[x] = up[up[x]];
  return x;
}

static int check(const cc_t* c, char* why, size_t why_len) {
  const uint64_t total = c->n * (uint64_t)c->procs;
  uint64_t* up = (uint64_t*)malloc(total * sizeof *up);
  uint64_t* sz = (uint64_t*)calloc(total, sizeof *sz);
  int ok = up && sz;
  for (uint64_t x = 0; ok && x < total; ++x) up[x] = x;
  for (uint64_t e = 0; ok && e < c->m * (uint64_t)c->procs; ++e) {
    uint64_t u, v;
    edge(c, e, &u, &v);
    const uint64_t ru = serial_root(up, u), rv = serial_root(up, v);
    if (ru < rv) up[rv] = ru;
    if (rv < ru) up[ru] = rv;
  }
  for (uint64_t x = 0; ok && x < total; ++x) sz[serial_root(up, x)]++;
  /* ranks: per component, count and sum over all processors */
  uint64_t* rank_sum = (uint64_t*)calloc(total, sizeof *rank_sum);
  ok = ok && rank_sum;
  for (uint64_t i = 0; ok && i < c->n; ++i) {
    const uint64_t x = (uint64_t)c->me * c->n + i, want = serial_root(up, x);
    const uint64_t got_size = ((const uint64_t*)c->size.local)[i];
    if (c->label[i] != want || c->rank[i] >= sz[want] || got_size != (want == x ? sz[x] : 0)) {
      snprintf(why, why_len, "vertex %" PRIu64 ": label %" PRIu64 " rank %" PRIu64 " size %" PRIu64
               "; serially label %" PRIu64 " size %" PRIu64, x, c->label[i], c->rank[i], got_size,
               want, sz[want]);
      ok = 0;
    }
    if (ok) rank_sum[want] += c->rank[i];
  }
  if (rank_sum) splitc_all_reduce(rank_sum, total, SPLITC_INT64, SPLITC_SUM);
  for (uint64_t x = 0; ok && x < total; ++x)
    if (sz[x] && rank_sum[x] != sz[x] * (sz[x] - 1) / 2) {
      snprintf(why, why_len, "component of %" PRIu64 ": ranks sum to %" PRIu64 ", not 0 + .. + %" PRIu64,
               x, rank_sum[x], sz[x] - 1);
      ok = 0;
    }
  free(up);
  free(sz);
  free(rank_sum);
  return ok;
}

int main(int argc, char** argv) {
  app_opt_t o[] = {{"n", "vertices-per-processor", 4096, NULL},
                   {"edges", "per-processor", 4096, NULL},
                   {"local", "percent", 50, NULL},
                   {"seed", "s", 1, NULL},
                   {"break", "0|1: spoil one rank before the check", 0, NULL}};
  if (app_parse(argc, argv, APP, o, 5)) return 2;
  cc_t c = {0};
  c.n = o[0].value;
  c.m = o[1].value;
  c.local_pct = o[2].value;
  c.seed = o[3].value;
  if (!c.n || c.local_pct > 100) {
    fprintf(stderr, APP ": --n positive, --local 0..100\n");
    return 2;
  }
  if (splitc_init(&argc, &argv, 2 * c.n * sizeof(uint64_t) + (1u << 20)) != SPLITC_OK) return 1;
  c.me = splitc_my_proc();
  c.procs = splitc_procs();
  int ok = 1;
  c.label = (uint64_t*)malloc(c.n * sizeof(uint64_t));
  c.rank = (uint64_t*)malloc(c.n * sizeof(uint64_t));
  if (!c.label || !c.rank || splitc_spread_alloc(&c.parent, c.n * (uint64_t)c.procs, 8, SPLITC_BLOCKED) ||
      splitc_spread_alloc(&c.size, c.n * (uint64_t)c.procs, 8, SPLITC_BLOCKED))
    return app_finish(APP, 0, "out of memory");
  for (uint64_t i = 0; i < c.n; ++i) ((uint64_t*)c.parent.local)[i] = (uint64_t)c.me * c.n + i;
  double t0 = app_phase_begin();
  hook(&c);
  app_phase_end(APP, "hook", t0);
  t0 = app_phase_begin();
  label(&c);
  app_phase_end(APP, "label", t0);
  t0 = app_phase_begin();
  count(&c);
  app_phase_end(APP, "count", t0);
  if (o[4].value && c.me == 0) c.rank[0] += 1;
  ok = check(&c, app_why, sizeof app_why);
  return app_finish(APP, ok, app_why);
}
