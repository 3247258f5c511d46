/*
 * splitc_api.c — the Split-C library (hpam_splitc.h) call by call, under
 * mpirun over any transport: spread-array layouts, blocking and split-phase
 * access, signaling stores with store_sync and all_store_sync, atomics,
 * collectives, and the errors (bad global pointer, out-of-range index,
 * unaligned atomic, mismatched collective allocation) refused with the
 * processor and index named and no byte written. Prints "splitc_api: ok".
 *
 *   splitc_api                run everything (errors in SPLITC_ERRORS_RETURN mode)
 *   splitc_api --abort-test   processor 1 indexes past the end in the default
 *                             mode: the job must end, naming processor and index
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpam_splitc.h"

static int me, np, failed;

#define CHECK(cond, ...)                                               \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "splitc_api: processor %d: line %d: ", me, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, "\n");                                           \
      failed++;                                                        \
    }                                                                  \
  } while (0)

static uint64_t value_of(uint64_t i) { return i * 0x9e3779b97f4a7c15ull + 7; }

static void layouts(void) {
  const uint64_t counts[] = {0, 1, 7, (uint64_t)np * 5 + 3};
  const uint64_t blocks[] = {SPLITC_BLOCKED, SPLITC_CYCLIC, 3};
  for (int c = 0; c < 4; ++c)
    for (int b = 0; b < 3; ++b) {
      splitc_spread_t a;
      CHECK(splitc_spread_alloc(&a, counts[c], 8, blocks[b]) == SPLITC_OK, "alloc");
      char* seen = calloc(counts[c] + 1, 1);
      uint64_t total = 0;
      for (int p = 0; p < np; ++p) {
        const uint64_t mine = splitc_spread_local_count(&a, p);
        CHECK(mine <= a.capacity, "count %" PRIu64 " above capacity %" PRIu64, mine, a.capacity);
        total += mine;
        for (uint64_t k = 0; k < mine; ++k) {
          const uint64_t i = splitc_spread_global_index(&a, p, k);
          CHECK(i < counts[c] && !seen[i], "proc %d local %" PRIu64 " -> %" PRIu64, p, k, i);
          if (i < counts[c]) seen[i] = 1;
          CHECK(splitc_spread_owner(&a, i) == p, "owner of %" PRIu64, i);
          const splitc_gptr_t g = splitc_spread_at(&a, i);
          CHECK(g.proc == p, "spread_at(%" PRIu64 ").proc %d, want %d", i, g.proc, p);
          if (p == me)
            CHECK(splitc_tolocal(g) == (char*)a.local + k * 8, "local address of %" PRIu64, i);
        }
      }
      CHECK(total == counts[c], "elements %" PRIu64 " of %" PRIu64, total, counts[c]);
      free(seen);
      splitc_spread_free(&a);
    }
}

static void access_paths(void) {
  splitc_spread_t a;
  const uint64_t n = (uint64_t)np * 64;
  splitc_spread_alloc(&a, n, 8, SPLITC_CYCLIC);
  for (uint64_t i = 0; i < n; ++i)
    if ((int)(i % (uint64_t)np) == (me + 1) % np) splitc_put_u64(splitc_spread_at(&a, i), value_of(i));
  splitc_sync();
  splitc_barrier();
  uint64_t* got = calloc(n, 8);
  for (uint64_t i = 0; i < n; ++i) splitc_get_u64(&got[i], splitc_spread_at(&a, i));
  splitc_sync();
  for (uint64_t i = 0; i < n; ++i) CHECK(got[i] == value_of(i), "get %" PRIu64, i);
  /* blocking: read my right neighbour's first element, write it back + 1 */
  const splitc_gptr_t g = splitc_spread_at(&a, (uint64_t)((me + 1) % np));
  uint64_t v = 0;
  CHECK(splitc_read_u64(&v, g) == SPLITC_OK && v == value_of((uint64_t)((me + 1) % np)), "read");
  splitc_barrier();
  splitc_write_u64(g, v + 1);
  splitc_barrier();
  CHECK(((uint64_t*)a.local)[0] == value_of((uint64_t)me) + 1, "write from the left neighbour");
  /* bulk: a blocked array, each processor bulk-puts its block to the right */
  uint64_t* blk = splitc_all_alloc(4096);
  uint64_t* src = malloc(4096);
  for (int k = 0; k < 512; ++k) src[k] = value_of((uint64_t)(me * 512 + k));
  splitc_bulk_put(splitc_toglobal((me + 1) % np, blk), src, 4096);
  splitc_sync();
  splitc_barrier();
  const int left = (me + np - 1) % np;
  for (int k = 0; k < 512; ++k) CHECK(blk[k] == value_of((uint64_t)(left * 512 + k)), "bulk_put %d", k);
  memset(src, 0, 4096);
  splitc_bulk_read(src, splitc_toglobal((me + 1) % np, blk), 4096);
  for (int k = 0; k < 512; ++k) CHECK(src[k] == value_of((uint64_t)(me * 512 + k)), "bulk_read %d", k);
  splitc_barrier();
  free(src);
  free(got);
  splitc_all_free(blk);
  splitc_spread_free(&a);
}

/* Processor p stores (p + 1) * 8 u64 words, (p + 1) u32 words and one bulk
 * of 100 bytes to every processor; store_sync waits for exactly that. */
static void stores(void) {
  const uint64_t words = 8 * (uint64_t)np, small = (uint64_t)np;
  uint64_t* w = splitc_all_alloc((size_t)np * words * 8);
  uint32_t* h = splitc_all_alloc((size_t)np * small * 4);
  char* bulk = splitc_all_alloc((size_t)np * 100);
  char text[100];
  memset(text, 'a' + me, sizeof text);
  uint64_t expected = 0;
  for (int p = 0; p < np; ++p) expected += (uint64_t)(p + 1) * (8 * 8 + 4) + 100;
  for (int round = 0; round < 2; ++round) {
    for (int d = 0; d < np; ++d) {
      for (int k = 0; k < (me + 1) * 8; ++k)
        splitc_store_u64(splitc_toglobal(d, w + me * words + k), value_of((uint64_t)(round * 1000 + me * 100 + k)));
      for (int k = 0; k < me + 1; ++k) splitc_store_u32(splitc_toglobal(d, h + me * small + k), (uint32_t)(round + me + k));
      splitc_bulk_store(splitc_toglobal(d, bulk + me * 100), text, sizeof text);
    }
    if (round == 0)
      CHECK(splitc_store_sync(expected) == SPLITC_OK, "store_sync");
    else
      CHECK(splitc_all_store_sync() == SPLITC_OK, "all_store_sync");
    for (int p = 0; p < np; ++p) {
      for (int k = 0; k < (p + 1) * 8; ++k)
        CHECK(w[p * words + k] == value_of((uint64_t)(round * 1000 + p * 100 + k)), "store from %d word %d", p, k);
      for (int k = 0; k < p + 1; ++k) CHECK(h[p * small + k] == (uint32_t)(round + p + k), "u32 from %d", p);
      CHECK(bulk[p * 100] == 'a' + p && bulk[p * 100 + 99] == 'a' + p, "bulk store from %d", p);
    }
    splitc_barrier(); /* nobody stores round 2 into what another still checks */
  }
  splitc_all_free(w);
}

/* all_store_sync completes every store for every reader, not only for its
 * owner: a one-word store waits as a record in its owner's inbox until the
 * owner applies it, so a third processor that read the owner's heap right
 * after all_store_sync found the old word whenever the owner was slower to
 * apply (the README example read 0 instead of 299 under load). Round after
 * round each processor stores to its right neighbour and every processor
 * then reads every other's word. */
static void third_party_reads(void) {
  uint64_t* slot = splitc_all_alloc(8);
  int stale = 0;
  *slot = 0;
  splitc_barrier();
  for (uint64_t round = 1; round <= 300; ++round) {
    splitc_store_u64(splitc_toglobal((me + 1) % np, slot), round * 1000 + (uint64_t)me);
    CHECK(splitc_all_store_sync() == SPLITC_OK, "all_store_sync, round %llu", (unsigned long long)round);
    for (int p = 0; p < np; ++p) {
      uint64_t v = 0;
      splitc_read_u64(&v, splitc_toglobal(p, slot));
      const uint64_t want = round * 1000 + (uint64_t)((p + np - 1) % np);
      if (v != want && !stale++) /* every round still runs: the collectives stay matched */
        CHECK(0, "round %llu: processor %d's word read %llu, stored %llu", (unsigned long long)round, p,
              (unsigned long long)v, (unsigned long long)want);
    }
    splitc_barrier(); /* nobody stores the next round into a word another still reads */
  }
  splitc_all_free(slot);
}

/* Coalesced stores in bulk: every processor stores `n` u32 words (more than
 * an inbox ring holds, in batches) to every processor, destinations
 * interleaved, while processor 0's owners are busy elsewhere (the ring
 * fills: the rest goes as direct puts, nobody waits); then all_store_sync,
 * and every word is checked. Then store_sync(bytes) with exact counts. */
static void many_stores(void) {
  const uint64_t n = 40000;
  uint32_t* w = splitc_all_alloc((size_t)np * n * 4);
  splitc_stats_t before, after;
  splitc_get_stats(&before);
  for (uint64_t k = 0; k < n; ++k)
    for (int d = 0; d < np; ++d) {
      const int to = (d + me) % np;
      splitc_store_u32(splitc_toglobal(to, w + (uint64_t)me * n + k), (uint32_t)(k * 7 + (uint64_t)me * 13 + (uint64_t)to));
    }
  CHECK(splitc_all_store_sync() == SPLITC_OK, "all_store_sync after many stores");
  for (int p = 0; p < np; ++p)
    for (uint64_t k = 0; k < n; ++k)
      if (w[(uint64_t)p * n + k] != (uint32_t)(k * 7 + (uint64_t)p * 13 + (uint64_t)me)) {
        CHECK(0, "coalesced store from %d word %llu", p, (unsigned long long)k);
        break;
      }
  splitc_barrier();
  for (int d = 0; d < np; ++d)
    for (uint64_t k = 0; k < 3000; ++k)
      splitc_store_u64(splitc_toglobal(d, (uint64_t*)w + (uint64_t)me * 3000 + k), k + 1);
  CHECK(splitc_store_sync((uint64_t)np * 3000 * 8) == SPLITC_OK, "store_sync of exact bytes");
  for (int p = 0; p < np; ++p)
    for (uint64_t k = 0; k < 3000; ++k)
      if (((uint64_t*)w)[(uint64_t)p * 3000 + k] != k + 1) {
        CHECK(0, "store_sync word %llu from %d", (unsigned long long)k, p);
        break;
      }
  splitc_get_stats(&after);
  CHECK(np == 1 || after.coalesced_batches > before.coalesced_batches, "stores went as records");
  CHECK(after.bad_records == 0, "no record refused");
  splitc_barrier();
  splitc_all_free(w);
}

static void atomics(void) {
  uint64_t* word = splitc_all_alloc(3 * 8);
  const splitc_gptr_t counter = splitc_toglobal(0, word), flag = splitc_toglobal(0, word + 1);
  const int times = 50;
  uint64_t sum_old = 0, old = 0;
  for (int k = 0; k < times; ++k) {
    splitc_fetch_add_u64(&old, counter, 1);
    sum_old += old;
  }
  int won = 0;
  splitc_cas_u64(&old, flag, 0, (uint64_t)me + 1);
  won = old == 0;
  splitc_add_u64(splitc_toglobal(0, word + 2), 3);
  splitc_sync();
  splitc_barrier();
  int64_t totals[2] = {(int64_t)sum_old, won};
  splitc_all_reduce(totals, 2, SPLITC_INT64, SPLITC_SUM);
  const uint64_t n = (uint64_t)np * times;
  CHECK((uint64_t)totals[0] == n * (n - 1) / 2, "fetch_add olds are not 0..%" PRIu64, n - 1);
  CHECK(totals[1] == 1, "%" PRId64 " processors won the compare-and-swap", totals[1]);
  uint64_t v = 0;
  splitc_atomic_read_u64(&v, counter);
  CHECK(v == n, "counter %" PRIu64 ", want %" PRIu64, v, n);
  splitc_atomic_read_u64(&v, splitc_toglobal(0, word + 2));
  CHECK(v == 3 * (uint64_t)np, "add_u64 total %" PRIu64, v);
  splitc_all_free(word);
}

static void collectives(void) {
  int i3[3] = {me, me, me};
  splitc_all_reduce(i3, 1, SPLITC_INT, SPLITC_SUM);
  splitc_all_reduce(i3 + 1, 1, SPLITC_INT, SPLITC_MIN);
  splitc_all_reduce(i3 + 2, 1, SPLITC_INT, SPLITC_MAX);
  CHECK(i3[0] == np * (np - 1) / 2 && i3[1] == 0 && i3[2] == np - 1, "int reduce %d %d %d", i3[0], i3[1], i3[2]);
  double d[2] = {me + 0.5, me + 0.5};
  splitc_all_reduce(d, 1, SPLITC_DOUBLE, SPLITC_MAX);
  splitc_all_scan(d + 1, 1, SPLITC_DOUBLE, SPLITC_SUM);
  const double scan = (double)me * (me + 1) / 2.0 + (me + 1) * 0.5; /* sum of p + 0.5, p <= me */
  CHECK(d[0] == np - 0.5 && d[1] == scan, "double reduce %g scan %g", d[0], d[1]);
  int64_t s = me + 1;
  splitc_all_scan(&s, 1, SPLITC_INT64, SPLITC_SUM);
  CHECK(s == (int64_t)(me + 1) * (me + 2) / 2, "int64 scan %" PRId64, s);
  char msg[16] = "";
  if (me == np - 1) strcpy(msg, "from the last");
  splitc_broadcast(msg, sizeof msg, np - 1);
  CHECK(strcmp(msg, "from the last") == 0, "broadcast got '%s'", msg);
}

/* Refused accesses: error code, message naming processor and address or
 * index, and not one byte written anywhere. */
static void errors(void) {
  splitc_set_error_mode(SPLITC_ERRORS_RETURN);
  splitc_spread_t a;
  splitc_spread_alloc(&a, (uint64_t)np * 4, 8, SPLITC_BLOCKED);
  uint64_t* guard = splitc_all_alloc(64);
  memset(guard, 0x5a, 64);
  splitc_barrier();
  char want[96];
  const uint64_t n = (uint64_t)np * 4;
  splitc_gptr_t g = splitc_spread_at(&a, n);
  snprintf(want, sizeof want, "processor %d: spread array index %" PRIu64 " out of range", me, n);
  CHECK(g.proc == -1 && strstr(splitc_last_error(), want), "index error: '%s'", splitc_last_error());
  CHECK(splitc_write_u64(g, 1) == SPLITC_ERR_BAD_GPTR, "write through a refused pointer");
  g = splitc_spread_at(&a, 0);
  g.proc = np;
  snprintf(want, sizeof want, "processor %d", np);
  CHECK(splitc_write_u64(g, 1) == SPLITC_ERR_BAD_GPTR && strstr(splitc_last_error(), want),
        "nonexistent processor: '%s'", splitc_last_error());
  /* past the end of the peer's heap, and a range that starts inside it */
  const int peer = (me + 1) % np;
  const splitc_gptr_t in = splitc_toglobal(peer, guard);
  CHECK(splitc_write_u64(splitc_gptr_add(in, 1ll << 40), 1) == SPLITC_ERR_BAD_GPTR, "far address");
  snprintf(want, sizeof want, "bad global pointer (processor %d, address 0x%" PRIx64, peer, in.addr);
  static char big[1 << 20];
  CHECK(splitc_bulk_write(in, big, (size_t)1 << 40) == SPLITC_ERR_BAD_GPTR &&
            strstr(splitc_last_error(), want),
        "range past the end: '%s'", splitc_last_error());
  CHECK(splitc_bulk_store(in, big, (size_t)1 << 40) == SPLITC_ERR_BAD_GPTR, "store past the end");
  CHECK(splitc_bulk_write(splitc_gptr_add(in, -(1ll << 40)), big, 8) == SPLITC_ERR_BAD_GPTR, "below the heap");
  uint64_t old;
  CHECK(splitc_cas_u64(&old, splitc_gptr_add(in, 4), 0, 1) == SPLITC_ERR_BAD_GPTR &&
            strstr(splitc_last_error(), "aligned"),
        "unaligned atomic: '%s'", splitc_last_error());
  int on_stack = 0;
  CHECK(splitc_toglobal(peer, &on_stack).proc == -1, "a stack address is not global");
  CHECK(splitc_all_alloc((size_t)64 + (size_t)me) == NULL || np == 1, "mismatched all_alloc");
  if (np > 1) CHECK(strstr(splitc_last_error(), "collective") != NULL, "'%s'", splitc_last_error());
  splitc_barrier();
  for (int k = 0; k < 64; ++k) CHECK(((unsigned char*)guard)[k] == 0x5a, "guard byte %d written", k);
  CHECK(splitc_gptr_valid(in, 64) && !splitc_gptr_valid(in, (size_t)1 << 40), "gptr_valid");
  splitc_set_error_mode(SPLITC_ERRORS_ABORT);
}

int main(int argc, char** argv) {
  if (splitc_init(&argc, &argv, 1 << 22) != SPLITC_OK) return 1;
  me = splitc_my_proc();
  np = splitc_procs();
  if (argc > 1 && strcmp(argv[1], "--abort-test") == 0) {
    splitc_spread_t a;
    splitc_spread_alloc(&a, 10, 8, SPLITC_CYCLIC);
    if (me == 1 || np == 1) splitc_write_u64(splitc_spread_at(&a, 10), 1); /* ends the job */
    splitc_barrier();
    splitc_finalize();
    return 0;
  }
  layouts();
  access_paths();
  stores();
  third_party_reads();
  many_stores();
  atomics();
  collectives();
  errors();
  int all = failed;
  splitc_all_reduce(&all, 1, SPLITC_INT, SPLITC_SUM);
  splitc_finalize();
  splitc_set_error_mode(SPLITC_ERRORS_RETURN);
  uint64_t v;
  CHECK(splitc_read_u64(&v, splitc_toglobal(0, &v)) == SPLITC_ERR_STATE, "use after finalize");
  if (me == 0 && !all && !failed) printf("splitc_api: ok\n");
  return all || failed ? 1 : 0;
}
