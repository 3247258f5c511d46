/*
 * app_common.h — what every Split-C application in bench/apps shares:
 * options, the deterministic generator that lets any processor recompute
 * any input element, phase timing, and the closing verdict.
 *
 * Output (processor 0): human-readable lines, and for bench/run lines
 *   phase,<app>,<phase>,<seconds>        (between barriers; the slowest processor)
 *   stat,<app>,<counter>,<value>         (splitc_stats summed over processors)
 * and last "<app>: ok" or "<app>: FAILED: <why>" (exit status 1).
 */
#ifndef HPAM_APP_COMMON_H
#define HPAM_APP_COMMON_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_splitc.h"

/* splitmix64 of (seed, stream, i): every processor can regenerate any input. */
static inline uint64_t app_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t app_rand(uint64_t seed, uint64_t stream, uint64_t i) {
  return app_mix(app_mix(seed ^ (stream * 0x632be59bd9b4e019ull)) + i);
}

/* --name value options; a bad or unknown option ends the program with a usage line. */
typedef struct app_opt {
  const char* name;  /* without the leading -- */
  const char* help;
  uint64_t value;    /* default on entry, parsed value on return */
  const char* text;  /* for string options (value unused); NULL for numbers */
} app_opt_t;

static inline void app_usage(const char* app, const app_opt_t* o, int n) {
  fprintf(stderr, "usage: %s", app);
  for (int i = 0; i < n; ++i) fprintf(stderr, " [--%s %s]", o[i].name, o[i].help);
  fprintf(stderr, "\n");
}

static inline int app_parse(int argc, char** argv, const char* app, app_opt_t* o, int n) {
  for (int a = 1; a < argc; a += 2) {
    int k = -1;
    for (int i = 0; i < n; ++i)
      if (strncmp(argv[a], "--", 2) == 0 && strcmp(argv[a] + 2, o[i].name) == 0) k = i;
    char* end = NULL;
    if (k < 0 || a + 1 >= argc) {
      app_usage(app, o, n);
      return -1;
    }
    if (o[k].text) {
      o[k].text = argv[a + 1];
      continue;
    }
    o[k].value = strtoull(argv[a + 1], &end, 0);
    if (!end || *end) {
      fprintf(stderr, "%s: --%s wants a number, not '%s'\n", app, o[k].name, argv[a + 1]);
      return -1;
    }
  }
  return 0;
}

/* Phases start and end at barriers, so a phase's time is the slowest
 * processor's. */
static inline double app_phase_begin(void) {
  splitc_barrier();
  return splitc_wtime();
}
static inline double app_phase_end(const char* app, const char* phase, double t0) {
  splitc_barrier();
  const double s = splitc_wtime() - t0;
  if (splitc_my_proc() == 0) printf("phase,%s,%s,%.6f\n", app, phase, s);
  return s;
}

static inline void app_print_stats(const char* app) {
  splitc_stats_t s;
  splitc_get_stats(&s);
  uint64_t v[] = {s.reads, s.writes, s.gets, s.puts, s.stores, s.atomics, s.bytes_read,
                  s.bytes_written, s.flushes, s.notifications, s.sync_polls};
  const char* names[] = {"reads", "writes", "gets", "puts", "stores", "atomics", "bytes_read",
                         "bytes_written", "flushes", "notifications", "sync_polls"};
  const int n = (int)(sizeof v / sizeof v[0]);
  splitc_all_reduce(v, (size_t)n, SPLITC_INT64, SPLITC_SUM);
  if (splitc_my_proc() == 0)
    for (int i = 0; i < n; ++i) printf("stat,%s,%s,%" PRIu64 "\n", app, names[i], v[i]);
}

/* The verdict over all processors: everyone's `ok` and the first reason
 * given. Prints "<app>: ok" or "<app>: FAILED: ..." on processor 0 and
 * returns the exit status. Finalizes the runtime. */
static inline int app_finish(const char* app, int ok, const char* why) {
  int all = ok;
  splitc_all_reduce(&all, 1, SPLITC_INT, SPLITC_MIN);
  if (!ok) fprintf(stderr, "%s: processor %d: %s\n", app, splitc_my_proc(), why ? why : "wrong");
  app_print_stats(app);
  if (splitc_my_proc() == 0) {
    if (all)
      printf("%s: ok\n", app);
    else
      printf("%s: FAILED: %s\n", app, ok ? "see the other processors' messages" : why);
  }
  fflush(stdout);
  splitc_finalize();
  return all ? 0 : 1;
}

/* Marks this processor wrong (`int ok` in scope) and keeps the first
 * reason for app_finish. */
static char app_why[256];
#define APP_CHECK(cond, ...)                                  \
  do {                                                        \
    if (!(cond)) {                                            \
      if (ok) snprintf(app_why, sizeof app_why, __VA_ARGS__); \
      ok = 0;                                                 \
    }                                                         \
  } while (0)

#endif /* HPAM_APP_COMMON_H */
