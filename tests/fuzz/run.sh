#!/usr/bin/env bash
# make check: every fuzz harness for a few seconds (HPAM_FUZZ_CHECK_SECONDS,
# default 5) from its committed seed corpus, which it only reads. Skipped,
# saying why, when configure found no clang with libFuzzer.
dir=${HPAM_BUILDDIR:?}/tests/fuzz
seeds=${HPAM_SRCDIR:?}/tests/fuzz/corpus
seconds=${HPAM_FUZZ_CHECK_SECONDS:-5}
shopt -s nullglob
harnesses=()
for f in "$dir"/fuzz_*; do [ -x "$f" ] && [ -f "$f" ] && harnesses+=("${f##*/fuzz_}"); done
if [ ${#harnesses[@]} -eq 0 ]; then
  echo "SKIP: no fuzz harnesses built (configure found no clang with libFuzzer; Debian: clang-14 libclang-rt-14-dev)"
  exit 77
fi
failed=0
for h in "${harnesses[@]}"; do
  work=$(mktemp -d)
  log=$work/log
  if timeout -k 10 $((seconds * 6 + 120)) "$dir/fuzz_$h" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work" "$seeds/$h" >"$log" 2>&1; then
    echo "PASS: fuzz_$h ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') execs, $(grep -o 'cov: [0-9]*' "$log" | tail -1))"
  else
    echo "FAIL: fuzz_$h"
    tail -n 40 "$log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      echo "reproducer: $a ($(od -An -tx1 "$a" | head -c 600))"
    done
    failed=1
  fi
  rm -rf "$work"
done
exit $failed
