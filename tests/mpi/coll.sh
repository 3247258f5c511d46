#!/usr/bin/env bash
# mpi_coll over btl/hpam at 2, 3 and 4 ranks on both NIC models, then again
# with faults injected (1% drop, 1% duplicate, 1% corrupt, 2% reorder).
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  for np in 2 3 4; do
    expect_ok "coll np=$np nic=$nic" $np $nic mpi_coll
  done
  for np in 2 4; do
    # shellcheck disable=SC2086
    expect_ok "coll np=$np nic=$nic with faults" $np $nic mpi_coll $faults
  done
done
finish
