#!/usr/bin/env bash
# The GAM basic benchmarks and torture tests (HP-LAM 4.1), small, on both
# NIC models: ping_pong, ping_bulk and thru_bulk check every transfer;
# test_xfer and test_med run 1-to-1, all-to-1 and all-to-all among 2 and 4
# processes (and 3 with faults on the wire), checking the data and every
# guard byte around every destination block.
set -u
: "${HPAM_BUILDDIR:?run through make check}"
. "$(dirname "$0")/../common/expect.sh"
gam() {  # gam NAME PROGRAM [ARGS...]: must exit 0 and print "<program>: ok"
  local name=$1 prog=$2
  shift 2
  expect_run ok "$name" "^$prog: ok" "$HPAM_BUILDDIR/tests/gam/$prog" "$@"
}
faults="--drop 0.01 --duplicate 0.01 --corrupt 0.01 --reorder 0.02"
for nic in medusa hamlyn; do
  gam "ping_pong nic=$nic" ping_pong --nic "$nic" --iters 2000
  gam "ping_bulk nic=$nic" ping_bulk --nic "$nic" --iters 200 --sizes 1,1000,8000
  gam "thru_bulk nic=$nic" thru_bulk --nic "$nic" --iters 2000 --sizes 1,1000,8000
  for t in test_xfer test_med; do
    for p in 2 4; do
      gam "$t nic=$nic procs=$p" "$t" --nic "$nic" --procs "$p" --per-pair 12
    done
    # shellcheck disable=SC2086
    gam "$t nic=$nic procs=3 with faults" "$t" --nic "$nic" --procs 3 --per-pair 8 $faults
    injected=$(awk -F, '/wire_faults/ {n += $7} END {print n + 0}' <<<"$out")
    if [ "$injected" -gt 0 ]; then
      echo "PASS: $t nic=$nic: $injected faults were injected on the wire and survived"
    else
      echo "FAIL: $t nic=$nic: the faulty run injected no fault"
      failures=$((failures + 1))
    fi
  done
done
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
