#!/usr/bin/env bash
# The Split-C library call by call (tests/splitc/splitc_api.c) over vader and
# over hpam on both NIC models, at 2, 3 and 4 ranks; then an out-of-range
# index in the default error mode must end the job, naming processor and index.
. "$(dirname "$0")/app_matrix.sh"
api() {  # api NAME NP "BTL ARGS" [ARGS]
  local name=$1 np=$2 btl=$3
  shift 3
  # shellcheck disable=SC2086
  out=$(timeout -k 5 120 "$MPIRUN" -np "$np" --oversubscribe --mca pml ob1 \
        --mca mca_base_component_path "$component_path" $btl "$HPAM_BUILDDIR/tests/splitc/splitc_api" "$@" 2>&1)
}
for np in 2 3 4; do
  for cfg in "vader|$vader" "medusa|$hpam --mca btl_hpam_nic medusa" "hamlyn|$hpam --mca btl_hpam_nic hamlyn"; do
    api "np=$np ${cfg%%|*}" "$np" "${cfg#*|}"
    if [ $? -eq 0 ] && grep -q "^splitc_api: ok" <<<"$out"; then
      echo "PASS: splitc_api np=$np ${cfg%%|*}"
    else
      echo "FAIL: splitc_api np=$np ${cfg%%|*}"
      echo "$out" | tail -n 30
      failures=$((failures + 1))
    fi
  done
done
api abort 3 "$hpam" --abort-test
if [ $? -ne 0 ] && grep -q "splitc: processor 1: spread array index 10 out of range" <<<"$out"; then
  echo "PASS: an out-of-range index ends the job, naming processor and index"
else
  echo "FAIL: the out-of-range index did not end the job with its message"
  echo "$out" | tail -n 10
  failures=$((failures + 1))
fi
finish
