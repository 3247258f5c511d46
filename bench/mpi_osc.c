/* OSU-style one-sided benchmarks, our own code following the method of the
 * OSU Micro-Benchmarks' osu_put_latency, osu_get_latency, osu_put_bw,
 * osu_acc_latency, osu_fop_latency and osu_cas_latency (issue 23):
 *
 * * two ranks; rank 0 is the origin, rank 1 the target, which only waits
 *   in MPI_Barrier (and so progresses, as osc/pt2pt needs);
 * * a new window for every test and size, of the size the test touches
 *   (put_bw: a window's worth of messages side by side), made by
 *   `--window create` (MPI_Win_create on memory from malloc, touched) or
 *   `--window allocate` (MPI_Win_allocate);
 * * OSU's default synchronisation: MPI_Win_lock(MPI_LOCK_SHARED, 1) around
 *   the whole loop, and MPI_Win_flush(1) after every operation (put_bw:
 *   after every window of 64 puts, 32 above 8 KiB);
 * * operands as OSU's: put / get / put_bw of MPI_CHAR (bytes),
 *   MPI_Accumulate of MPI_CHAR with MPI_SUM, MPI_Fetch_and_op of one
 *   MPI_LONG_LONG with MPI_SUM, MPI_Compare_and_swap of one MPI_LONG_LONG;
 * * a warm-up that is not timed (OSU: 100 operations, 10 above 8 KiB;
 *   put_bw here: a tenth as many windows).
 *
 * Where it differs: OSU times one loop of 10,000 operations (1,000 above
 * 8 KiB) and prints the mean; on a 2-core machine shared with other jobs a
 * rank is descheduled now and then, so here each figure is the median of
 * many short bursts in the same lock epoch (bench/mpi_pingpong.c says why).
 * `--osu` runs OSU's counts instead: one burst of 10,000 (1,000).
 *
 *   mpi_osc [--quick] [--osu] [--window create,allocate] [--tests a,b,...]
 *           [--sizes a,b,...]
 * CSV: test,window,bytes,value — µs per operation + flush, or MB/s (put_bw). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum test { put_latency, get_latency, put_bw, acc_latency, fop_latency, cas_latency, test_count };
static const char* const test_names[test_count] = {"put_latency", "get_latency", "put_bw",
                                                   "acc_latency", "fop_latency", "cas_latency"};
enum window { win_create, win_allocate, window_count };
static const char* const window_names[window_count] = {"create", "allocate"};

enum { large_message = 8192, max_bursts = 201, max_sizes = 32 };

struct plan {
  int bursts, burst, warmup; /* per size: bursts of `burst` operations after `warmup` */
};

static int bw_window(int bytes) {
  return bytes > large_message ? 32 : 64;
}

/* OSU's counts (--osu), or bursts; large messages get fewer of either.
 * put_bw counts windows of bw_window() puts: a tenth as many. */
static struct plan plan_for(enum test k, int bytes, int quick, int osu) {
  const int large = bytes > large_message, per = k == put_bw ? 10 : 1;
  struct plan p = {large ? 11 : 51, large ? 10 : 100, large ? 10 : 100};
  if (osu)
    p = (struct plan){1, large ? 1000 : 10000, large ? 10 : 100};
  else if (quick)
    p.bursts = large ? 5 : 21;
  p.burst = p.burst / per > 0 ? p.burst / per : 1;
  p.warmup = p.warmup / per > 0 ? p.warmup / per : 1;
  return p;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* A window of `bytes` bytes at rank 1 (and rank 0), made as `w` says; *mem
 * is what to free after MPI_Win_free (NULL for MPI_Win_allocate). */
static MPI_Win make_window(enum window w, size_t bytes, void** mem) {
  MPI_Win win;
  void* base;
  if (w == win_allocate) {
    MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *mem = NULL;
  } else {
    base = malloc(bytes);
    MPI_Win_create(base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    *mem = base;
  }
  memset(base, 0, bytes);
  return win;
}

/* One operation of test k (put_bw: a window of puts), then the flush. */
static void one(enum test k, int bytes, char* src, char* dst, MPI_Win win) {
  long long inc = 1, old, compare = 0;
  switch (k) {
    case put_latency:
      MPI_Put(src, bytes, MPI_CHAR, 1, 0, bytes, MPI_CHAR, win);
      break;
    case get_latency:
      MPI_Get(dst, bytes, MPI_CHAR, 1, 0, bytes, MPI_CHAR, win);
      break;
    case put_bw:
      for (int j = 0, n = bw_window(bytes); j < n; ++j)
        MPI_Put(src + (size_t)j * bytes, bytes, MPI_CHAR, 1, (MPI_Aint)j * bytes, bytes, MPI_CHAR,
                win);
      break;
    case acc_latency:
      MPI_Accumulate(src, bytes, MPI_CHAR, 1, 0, bytes, MPI_CHAR, MPI_SUM, win);
      break;
    case fop_latency:
      MPI_Fetch_and_op(&inc, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
      break;
    case cas_latency:
      MPI_Compare_and_swap(&inc, &compare, &old, MPI_LONG_LONG, 1, 0, win);
      break;
    default:
      break;
  }
  MPI_Win_flush(1, win);
}

/* The figure of test k at `bytes` over a fresh window: rank 0's median over
 * the bursts of µs per operation (put_bw: MB/s); rank 1 returns 0. */
static double measure(enum test k, enum window w, int bytes, struct plan p, char* src, char* dst,
                      int rank) {
  static double v[max_bursts];
  const size_t span = (size_t)bytes * (k == put_bw ? bw_window(bytes) : 1);
  void* mem;
  MPI_Win win = make_window(w, span < 8 ? 8 : span, &mem);
  if (rank == 0) {
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
    for (int i = 0; i < p.warmup; ++i) one(k, bytes, src, dst, win);
    for (int b = 0; b < p.bursts; ++b) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < p.burst; ++i) one(k, bytes, src, dst, win);
      const double s = MPI_Wtime() - t0;
      v[b] = k == put_bw ? (double)span * p.burst / s / 1e6 : s / p.burst * 1e6;
    }
    MPI_Win_unlock(1, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_free(&win);
  free(mem);
  if (rank != 0) return 0;
  qsort(v, p.bursts, sizeof v[0], cmp);
  return v[p.bursts / 2];
}

/* Comma-separated names into flags[] (each name one of names[0..n)). */
static int parse_names(char* list, const char* const* names, int n, int* flags) {
  memset(flags, 0, sizeof *flags * n);
  for (char* t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int found = 0;
    for (int k = 0; k < n; ++k)
      if (!strcmp(t, names[k])) flags[k] = found = 1;
    if (!found) return -1;
  }
  return 0;
}

static int parse_sizes(char* list, int* sizes) {
  int n = 0;
  for (char* t = strtok(list, ","); t && n < max_sizes; t = strtok(NULL, ",")) {
    sizes[n] = atoi(t);
    if (sizes[n] < 1 || sizes[n] > (1 << 22)) return -1;
    ++n;
  }
  return n;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs, quick = 0, osu = 0, bad = 0, tests[test_count], windows[window_count];
  int sizes[max_sizes] = {1, 8, 64, 512, 4096, 16384, 65536, 1048576}, nsizes = 8;
  for (int k = 0; k < test_count; ++k) tests[k] = 1;
  for (int w = 0; w < window_count; ++w) windows[w] = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int explicit_sizes = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--osu"))
      osu = 1;
    else if (!strcmp(argv[i], "--tests") && i + 1 < argc)
      bad |= parse_names(argv[++i], test_names, test_count, tests) < 0;
    else if (!strcmp(argv[i], "--window") && i + 1 < argc)
      bad |= parse_names(argv[++i], window_names, window_count, windows) < 0;
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
      bad |= (nsizes = parse_sizes(argv[++i], sizes)) < 1, explicit_sizes = 1;
    else
      bad = 1;
  }
  if (bad || nprocs != 2) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpirun -np 2 mpi_osc [--quick] [--osu] [--window create,allocate] "
              "[--tests put_latency,...] [--sizes 8,4096,...]\n");
    MPI_Finalize();
    return 2;
  }
  if (quick && !explicit_sizes) {
    static const int q[] = {8, 4096, 65536};
    memcpy(sizes, q, sizeof q), nsizes = 3;
  }
  int most = 8;
  for (int s = 0; s < nsizes; ++s)
    if ((long)sizes[s] * bw_window(sizes[s]) > most) most = sizes[s] * bw_window(sizes[s]);
  char *src = malloc((size_t)most), *dst = malloc((size_t)most);
  memset(src, 1, (size_t)most), memset(dst, 0, (size_t)most);
  if (rank == 0) printf("test,window,bytes,value\n");
  for (int w = 0; w < window_count; ++w)
    for (int k = 0; k < test_count; ++k) {
      if (!windows[w] || !tests[k]) continue;
      const int atomic = k == fop_latency || k == cas_latency;
      for (int s = 0; s < (atomic ? 1 : nsizes); ++s) {
        const int bytes = atomic ? 8 : sizes[s];
        const double x = measure(k, w, bytes, plan_for(k, bytes, quick, osu), src, dst, rank);
        if (rank == 0) printf("%s,%s,%d,%.3f\n", test_names[k], window_names[w], bytes, x);
        fflush(stdout);
      }
    }
  free(src);
  free(dst);
  MPI_Finalize();
  return 0;
}
