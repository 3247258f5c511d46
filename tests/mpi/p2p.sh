#!/usr/bin/env bash
# mpi_p2p over btl/hpam at 2, 3 and 4 ranks on both NIC models, then again
# with faults injected (1% drop, 1% duplicate, 1% corrupt, 2% reorder).
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  for np in 2 3 4; do
    expect_ok "p2p np=$np nic=$nic" $np $nic mpi_p2p
  done
  for np in 2 4; do
    # shellcheck disable=SC2086
    expect_ok "p2p np=$np nic=$nic with faults" $np $nic mpi_p2p $faults
  done
done
# add_procs one peer at a time (Open MPI's lazy path), with faults too.
for nic in medusa hamlyn; do
  # shellcheck disable=SC2086
  expect_ok "p2p np=3 nic=$nic add_procs one at a time" 3 $nic mpi_p2p --mca mpi_add_procs_cutoff 0 $faults
done
finish
