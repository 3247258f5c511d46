/*
 * sort_check.h — inputs and verdict shared by the two sorts: the keys
 * (32-bit, key g = low word of app_rand(seed, 1, g)), a fingerprint that
 * any permutation preserves, and the check that the distributed result is
 * the sorted input: locally sorted, ordered across processor boundaries,
 * same fingerprint, and (when `serial`) equal element for element to a
 * serial sort of the regenerated input, fetched to processor 0.
 */
#ifndef HPAM_SORT_CHECK_H
#define HPAM_SORT_CHECK_H

#include "app_common.h"

static inline uint32_t sort_key(uint64_t seed, uint64_t g) {
  return (uint32_t)app_rand(seed, 1, g);
}

/* count and two independent hash sums of the keys, over all processors. */
static inline void sort_fingerprint(const uint32_t* k, uint64_t n, uint64_t out[3]) {
  out[0] = n;
  out[1] = out[2] = 0;
  for (uint64_t i = 0; i < n; ++i) {
    out[1] += app_mix(k[i]);
    out[2] += app_mix(k[i] + 0x51afd7ed558ccd00ull);
  }
  splitc_all_reduce(out, 3, SPLITC_INT64, SPLITC_SUM);
}

/* --break: processor 0 swaps its first two distinct keys, so the check must fail. */
static inline void sort_spoil(uint32_t* k, uint64_t n) {
  if (splitc_my_proc() != 0) return;
  for (uint64_t i = 1; i < n; ++i)
    if (k[i] != k[0]) {
      const uint32_t t = k[0];
      k[0] = k[i];
      k[i] = t;
      return;
    }
}

static int sort_cmp_u32(const void* a, const void* b) {
  const uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

/* Processor 0 fetches every processor's part (keys: the same symmetric
 * allocation everywhere; counts[p] keys on p) and compares with a serial
 * sort of the regenerated input. Returns 1 when equal. */
static inline int sort_serial_equal(const uint32_t* keys, const uint64_t* counts, uint64_t seed,
                                    uint64_t total, char* why, size_t why_len) {
  if (splitc_my_proc() != 0) return 1;
  uint32_t* want = (uint32_t*)malloc(total * sizeof *want);
  uint32_t* got = (uint32_t*)malloc(total * sizeof *got);
  int equal = want && got;
  for (uint64_t g = 0; equal && g < total; ++g) want[g] = sort_key(seed, g);
  if (equal) qsort(want, total, sizeof *want, sort_cmp_u32);
  uint64_t at = 0;
  for (int p = 0; equal && p < splitc_procs(); ++p) {
    equal = at + counts[p] <= total &&
            splitc_bulk_read(got + at, splitc_toglobal(p, keys), counts[p] * sizeof *got) == 0;
    at += counts[p];
  }
  for (uint64_t g = 0; equal && g < total; ++g)
    if (got[g] != want[g]) {
      snprintf(why, why_len, "position %" PRIu64 " holds %u, the serial sort has %u", g, got[g], want[g]);
      equal = 0;
    }
  if (equal && at != total) equal = 0;
  free(want);
  free(got);
  return equal;
}

/* The whole verdict; `before` is the input's fingerprint. */
static inline int sort_verify(const uint32_t* keys, uint64_t n, const uint64_t before[3],
                              uint64_t seed, uint64_t total, int serial, char* why, size_t why_len) {
  const int p = splitc_procs(), me = splitc_my_proc();
  int ok = 1;
  for (uint64_t i = 1; ok && i < n; ++i)
    if (keys[i - 1] > keys[i]) {
      snprintf(why, why_len, "local keys %" PRIu64 " and %" PRIu64 " out of order", i - 1, i);
      ok = 0;
    }
  /* counts, first and last key of every processor, everywhere */
  uint64_t* info = (uint64_t*)calloc(3 * (size_t)p, sizeof *info);
  info[3 * me] = n;
  info[3 * me + 1] = n ? keys[0] : 0;
  info[3 * me + 2] = n ? keys[n - 1] : 0;
  splitc_all_reduce(info, 3 * (size_t)p, SPLITC_INT64, SPLITC_SUM);
  uint64_t last = 0;
  for (int q = 0; q < p; ++q) {
    if (info[3 * q] && info[3 * q + 1] < last && ok) {
      snprintf(why, why_len, "processor %d starts with %" PRIu64 ", below %" PRIu64 " before it", q,
               info[3 * q + 1], last);
      ok = 0;
    }
    if (info[3 * q]) last = info[3 * q + 2];
  }
  uint64_t after[3];
  sort_fingerprint(keys, n, after);
  if (ok && (after[0] != before[0] || after[1] != before[1] || after[2] != before[2])) {
    snprintf(why, why_len, "the keys are not a permutation of the input (%" PRIu64 " keys, had %" PRIu64 ")",
             after[0], before[0]);
    ok = 0;
  }
  uint64_t* counts = (uint64_t*)calloc((size_t)p, sizeof *counts);
  for (int q = 0; q < p; ++q) counts[q] = info[3 * q];
  if (serial && ok && !sort_serial_equal(keys, counts, seed, total, why, why_len)) {
    if (!why[0]) snprintf(why, why_len, "differs from the serial sort");
    ok = 0;
  }
  free(counts);
  free(info);
  return ok;
}

#endif /* HPAM_SORT_CHECK_H */
