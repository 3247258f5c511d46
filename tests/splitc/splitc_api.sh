#!/usr/bin/env bash
# The Split-C library call by call (tests/splitc/splitc_api.c) over vader and
# over hpam on both NIC models, at 2, 3 and 4 ranks; then an out-of-range
# index in the default error mode must end the job, naming processor and index.
. "$(dirname "$0")/app_matrix.sh"
api() {  # api WANT NAME NP "MPIRUN ARGS" PATTERN [ARGS]
  local want=$1 name=$2 np=$3 args=$4 pattern=$5
  shift 5
  # shellcheck disable=SC2086
  expect_run "$want" "$name" "$pattern" "$MPIRUN" -np "$np" --oversubscribe --mca pml ob1 \
    --mca mca_base_component_path "$component_path" $args "$HPAM_BUILDDIR/tests/splitc/splitc_api" "$@"
}
for np in 2 3 4; do
  for cfg in "vader|$vader" "medusa|$hpam --mca btl_hpam_nic medusa" "hamlyn|$hpam --mca btl_hpam_nic hamlyn"; do
    api ok "splitc_api np=$np ${cfg%%|*}" "$np" "${cfg#*|}" "^splitc_api: ok"
  done
done
api fail "an out-of-range index ends the job, naming processor and index" 3 "$hpam" \
  "splitc: processor 1: spread array index 10 out of range" --abort-test
finish
