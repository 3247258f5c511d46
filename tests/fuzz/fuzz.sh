#!/usr/bin/env bash
# make fuzz: runs each named harness for N seconds, at low priority (the
# machine is shared), from the committed seeds plus what earlier runs found
# ($HPAM_BUILDDIR/tests/fuzz/corpus/<harness>, where new inputs go). A
# finding stops that harness and leaves its reproducer in
# $HPAM_BUILDDIR/tests/fuzz/findings/. HPAM_FUZZ_RUNS=N also stops each
# harness after N executions.
#   fuzz.sh SECONDS HARNESS...
seconds=${1:?seconds}
shift
dir=${HPAM_BUILDDIR:?}/tests/fuzz
seeds=${HPAM_SRCDIR:?}/tests/fuzz/corpus
mkdir -p "$dir/findings"
failed=0
for h in "$@"; do
  mkdir -p "$dir/corpus/$h"
  log=$dir/fuzz_$h.log
  nice -n 10 "$dir/fuzz_$h" -max_total_time="$seconds" -runs="${HPAM_FUZZ_RUNS:--1}" -timeout=20 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/findings/${h}-" "$dir/corpus/$h" "$seeds/$h" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz_$h: $execs execs, no finding; last: $last"
  else
    echo "fuzz_$h: FINDING (exit $rc) after $execs execs; see $log and $dir/findings/"
    failed=1
  fi
done
exit $failed
