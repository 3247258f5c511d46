/*
 * em3d.c — EM3D (Culler et al., "Parallel Programming in Split-C"):
 * electromagnetic waves on a bipartite graph of E and H nodes. Each node
 * has `degree` edges to nodes of the other kind, `remote` percent of them on
 * other processors; an iteration updates every E node from its H
 * neighbours, then every H node from its E neighbours:
 *     value -= sum_j weight_j * neighbour_j.value
 * Three versions of the remote read, as in the Split-C paper:
 *   read  blocking read of each remote neighbour through its global pointer;
 *   get   split-phase gets of a batch of nodes' remote neighbours, one sync;
 *   bulk  per processor, one bulk get of the span of its values this
 *         processor needs (prefetched ghost copies), one sync.
 * Every processor recomputes the whole graph serially and checks its own
 * nodes bit for bit (the arithmetic is the same function in the same order).
 *
 *   em3d [--n nodes-per-kind-per-processor] [--degree d] [--remote percent]
 *        [--iters k] [--seed s] [--variant read|get|bulk|all] [--break 0|1]
 */
#include "app_common.h"

#define APP "em3d"

enum { E = 0, H = 1 };

typedef struct graph {
  int me, procs;
  uint64_t n, degree, remote;
  uint64_t seed;
  splitc_spread_t value[2];   /* E and H values, blocked: n per processor */
  int32_t* nbr_proc[2];       /* per my node and edge */
  uint64_t* nbr_idx[2];       /* local index on nbr_proc */
  double* weight[2];
  uint64_t* lo[2];            /* per processor: span of indices my nodes of a kind need there */
  uint64_t* hi[2];
  double* ghost;              /* bulk variant: prefetched span per processor */
  uint64_t* ghost_at;         /* where processor q's span starts in ghost */
} graph_t;

/* Edge j of node g (global index) of kind k: neighbour processor, index, weight. */
static void edge(const graph_t* gr, int k, uint64_t g, uint64_t j, int32_t* proc, uint64_t* idx,
                 double* w) {
  const uint64_t r = app_rand(gr->seed, 10 + (uint64_t)k, g * gr->degree + j);
  const int owner = (int)(g / gr->n);
  *proc = owner;
  if (gr->procs > 1 && r % 100 < gr->remote)
    *proc = (int)((owner + 1 + (int)((r >> 8) % (uint64_t)(gr->procs - 1))) % gr->procs);
  *idx = (r >> 32) % gr->n;
  *w = (double)((r >> 16) & 0xffff) / 65536.0 / (double)gr->degree;
}

static double initial(const graph_t* gr, int k, uint64_t g) {
  return (double)(app_rand(gr->seed, 20 + (uint64_t)k, g) % 1000) / 1000.0;
}

/* The one update rule, shared by the parallel and the serial computation. */
static double update(double cur, const double* w, const double* v, uint64_t d) {
  double sum = 0;
  for (uint64_t j = 0; j < d; ++j) sum += w[j] * v[j];
  return cur - sum;
}

static int build(graph_t* gr) {
  const uint64_t m = gr->n * gr->degree, p = (uint64_t)gr->procs;
  for (int k = 0; k < 2; ++k) {
    if (splitc_spread_alloc(&gr->value[k], gr->n * p, sizeof(double), SPLITC_BLOCKED)) return -1;
    gr->nbr_proc[k] = (int32_t*)malloc(m * sizeof(int32_t));
    gr->nbr_idx[k] = (uint64_t*)malloc(m * sizeof(uint64_t));
    gr->weight[k] = (double*)malloc(m * sizeof(double));
    gr->lo[k] = (uint64_t*)malloc(p * sizeof(uint64_t));
    gr->hi[k] = (uint64_t*)calloc(p, sizeof(uint64_t));
    if (!gr->nbr_proc[k] || !gr->nbr_idx[k] || !gr->weight[k] || !gr->lo[k] || !gr->hi[k]) return -1;
    for (uint64_t q = 0; q < p; ++q) gr->lo[k][q] = UINT64_MAX;
    for (uint64_t i = 0; i < m; ++i) {
      const uint64_t g = (uint64_t)gr->me * gr->n + i / gr->degree;
      edge(gr, k, g, i % gr->degree, &gr->nbr_proc[k][i], &gr->nbr_idx[k][i], &gr->weight[k][i]);
      const int q = gr->nbr_proc[k][i];
      if (gr->nbr_idx[k][i] < gr->lo[k][q]) gr->lo[k][q] = gr->nbr_idx[k][i];
      if (gr->nbr_idx[k][i] >= gr->hi[k][q]) gr->hi[k][q] = gr->nbr_idx[k][i] + 1;
    }
  }
  gr->ghost = (double*)malloc(p * gr->n * sizeof(double));
  gr->ghost_at = (uint64_t*)malloc(p * sizeof(uint64_t));
  return gr->ghost && gr->ghost_at ? 0 : -1;
}

static void reset(graph_t* gr) {
  for (int k = 0; k < 2; ++k)
    for (uint64_t i = 0; i < gr->n; ++i)
      ((double*)gr->value[k].local)[i] = initial(gr, k, (uint64_t)gr->me * gr->n + i);
  splitc_barrier();
}

/* The neighbour values of node i of kind k (reading the other kind). */
static void gather(graph_t* gr, int k, uint64_t i, const char* variant, double* v) {
  const double* local = (const double*)gr->value[1 - k].local;
  for (uint64_t j = 0; j < gr->degree; ++j) {
    const uint64_t e = i * gr->degree + j, idx = gr->nbr_idx[k][e];
    const int q = gr->nbr_proc[k][e];
    if (q == gr->me)
      v[j] = local[idx];
    else if (variant[0] == 'r')
      splitc_read_f64(&v[j], splitc_toglobal(q, local + idx));
    else if (variant[0] == 'g')
      splitc_get_f64(&v[j], splitc_toglobal(q, local + idx));
    else
      v[j] = gr->ghost[gr->ghost_at[q] + idx - gr->lo[k][q]];
  }
}

/* bulk: one get per processor of the span of values my kind-k nodes need. */
static void prefetch(graph_t* gr, int k) {
  const double* local = (const double*)gr->value[1 - k].local;
  uint64_t at = 0;
  for (int q = 0; q < gr->procs; ++q) {
    gr->ghost_at[q] = at;
    if (q == gr->me || gr->hi[k][q] == 0) continue;
    const uint64_t len = gr->hi[k][q] - gr->lo[k][q];
    splitc_bulk_get(gr->ghost + at, splitc_toglobal(q, local + gr->lo[k][q]), len * sizeof(double));
    at += len;
  }
  splitc_sync();
}

enum { batch = 64 };

static void half_step(graph_t* gr, int k, const char* variant) {
  double* mine = (double*)gr->value[k].local;
  double* v = (double*)malloc(batch * gr->degree * sizeof(double));
  if (variant[0] == 'b') prefetch(gr, k);
  for (uint64_t i0 = 0; i0 < gr->n; i0 += batch) {
    const uint64_t i1 = i0 + batch < gr->n ? i0 + batch : gr->n;
    for (uint64_t i = i0; i < i1; ++i) gather(gr, k, i, variant, v + (i - i0) * gr->degree);
    if (variant[0] == 'g') splitc_sync();
    for (uint64_t i = i0; i < i1; ++i)
      mine[i] = update(mine[i], gr->weight[k] + i * gr->degree, v + (i - i0) * gr->degree, gr->degree);
  }
  free(v);
  splitc_barrier(); /* the other kind reads these next */
}

/* Every node of both kinds, serially; compares this processor's nodes. */
static int check(const graph_t* gr, uint64_t iters, char* why, size_t why_len) {
  const uint64_t total = gr->n * (uint64_t)gr->procs, d = gr->degree;
  double* val[2] = {(double*)malloc(total * sizeof(double)), (double*)malloc(total * sizeof(double))};
  double *w = (double*)malloc(d * sizeof(double)), *v = (double*)malloc(d * sizeof(double));
  int ok = val[0] && val[1] && w && v;
  for (int k = 0; ok && k < 2; ++k)
    for (uint64_t g = 0; g < total; ++g) val[k][g] = initial(gr, k, g);
  for (uint64_t it = 0; ok && it < 2 * iters; ++it) {
    const int k = (int)(it % 2);
    for (uint64_t g = 0; g < total; ++g) {
      for (uint64_t j = 0; j < d; ++j) {
        int32_t q;
        uint64_t idx;
        edge(gr, k, g, j, &q, &idx, &w[j]);
        v[j] = val[1 - k][(uint64_t)q * gr->n + idx];
      }
      val[k][g] = update(val[k][g], w, v, d);
    }
  }
  for (int k = 0; ok && k < 2; ++k)
    for (uint64_t i = 0; ok && i < gr->n; ++i) {
      const double got = ((const double*)gr->value[k].local)[i];
      const double want = val[k][(uint64_t)gr->me * gr->n + i];
      if (got != want) {
        snprintf(why, why_len, "%s node %" PRIu64 " is %.17g, the serial run has %.17g",
                 k == E ? "E" : "H", (uint64_t)gr->me * gr->n + i, got, want);
        ok = 0;
      }
    }
  free(val[0]);
  free(val[1]);
  free(w);
  free(v);
  return ok;
}

int main(int argc, char** argv) {
  app_opt_t o[] = {{"n", "nodes-per-kind-per-processor", 2000, NULL},
                   {"degree", "d", 10, NULL},
                   {"remote", "percent", 20, NULL},
                   {"iters", "k", 10, NULL},
                   {"seed", "s", 1, NULL},
                   {"variant", "read|get|bulk|all", 0, "all"},
                   {"break", "0|1: spoil one value before the check", 0, NULL}};
  if (app_parse(argc, argv, APP, o, 7)) return 2;
  graph_t gr = {0};
  gr.n = o[0].value;
  gr.degree = o[1].value;
  gr.remote = o[2].value;
  gr.seed = o[4].value;
  const char* want = o[5].text;
  if (!gr.n || !gr.degree || gr.remote > 100 ||
      (strcmp(want, "all") && strcmp(want, "read") && strcmp(want, "get") && strcmp(want, "bulk"))) {
    fprintf(stderr, APP ": --n and --degree positive, --remote 0..100, --variant read|get|bulk|all\n");
    return 2;
  }
  if (splitc_init(&argc, &argv, 2 * gr.n * sizeof(double) + (1u << 20)) != SPLITC_OK) return 1;
  gr.me = splitc_my_proc();
  gr.procs = splitc_procs();
  int ok = 1, all_ok = 1;
  if (build(&gr)) return app_finish(APP, 0, "out of memory");
  static const char* variants[] = {"read", "get", "bulk"};
  for (int vi = 0; vi < 3 && all_ok; ++vi) {
    if (strcmp(want, "all") && strcmp(want, variants[vi])) continue;
    reset(&gr);
    const double t0 = app_phase_begin();
    for (uint64_t it = 0; it < o[3].value; ++it) {
      half_step(&gr, E, variants[vi]);
      half_step(&gr, H, variants[vi]);
    }
    char name[32];
    snprintf(name, sizeof name, "iterate_%s", variants[vi]);
    app_phase_end(APP, name, t0);
    if (o[6].value && gr.me == 0) ((double*)gr.value[H].local)[0] += 1.0;
    ok = check(&gr, o[3].value, app_why, sizeof app_why);
    all_ok = ok;
    splitc_all_reduce(&all_ok, 1, SPLITC_INT, SPLITC_MIN); /* everyone stops together */
  }
  return app_finish(APP, ok, app_why);
}
