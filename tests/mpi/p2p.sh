#!/usr/bin/env bash
# mpi_p2p over btl/hpam at 2, 3 and 4 ranks on both NIC models, then again
# with faults injected (1% drop, 1% duplicate, 1% corrupt, 2% reorder);
# then with inline delivery off.
. "$(dirname "$0")/common.sh"
matrix mpi_p2p
# add_procs one peer at a time (Open MPI's lazy path), with faults too.
for nic in medusa hamlyn; do
  # shellcheck disable=SC2086
  expect_ok "p2p np=3 nic=$nic add_procs one at a time" 3 $nic mpi_p2p --mca mpi_add_procs_cutoff 0 $faults
done
# Every packet in its block, as on the papers' cards (no RX_READY cell or
# notification entry carries one), with faults too.
# shellcheck disable=SC2086
expect_ok "p2p nic=medusa, no inline cells, faults" 2 medusa mpi_p2p --mca btl_hpam_rx_ready_cell 16 $faults
# shellcheck disable=SC2086
expect_ok "p2p nic=hamlyn, no inline entries, faults" 2 hamlyn mpi_p2p --mca btl_hpam_notify_inline 0 $faults
finish
