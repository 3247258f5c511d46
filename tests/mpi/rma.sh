#!/usr/bin/env bash
# mpi_rma over btl/hpam at 2, 3 and 4 ranks on both NIC models, then again
# with faults injected (1% drop, 1% duplicate, 1% corrupt, 2% reorder).
. "$(dirname "$0")/common.sh"
matrix mpi_rma
# Open MPI's osc/rdma forced: MPI_Win_create then fails unless hpam offers
# RDMA, fetching atomics and atomic add to every peer (own rank included),
# so these runs prove that MPI RMA really goes through put/get/atomics.
for nic in medusa hamlyn; do
  expect_ok "mpi_rma np=3 nic=$nic osc/rdma" 3 "$nic" mpi_rma --mca osc rdma
  # shellcheck disable=SC2086
  expect_ok "mpi_rma np=4 nic=$nic osc/rdma with faults" 4 "$nic" mpi_rma --mca osc rdma $faults
done
finish
