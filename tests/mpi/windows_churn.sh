#!/usr/bin/env bash
# 10,000 windows of mixed sizes (0 B included) created and freed one after
# the other on one NIC model, Open MPI's osc/rdma, with puts, gets and an
# accumulate on each, every value checked; the registration slots in use
# must come back to where they were (mpi_windows churn). Run through
# windows_churn_medusa.sh and windows_churn_hamlyn.sh, one script per model:
# each window costs some 25 round trips inside Open MPI (communicator
# duplication and splits, allgathers, fences, barriers), so the churn is
# bound by round trips, i.e. by how soon the peer gets a CPU on a loaded
# machine, and each model gets the suite's whole per-script time.
. "$(dirname "$0")/common.sh"
: "${churn_nic:?set by windows_churn_<nic>.sh}"
HPAM_MPI_TIMEOUT=${HPAM_MPI_TIMEOUT:-840}
HPAM_PROG_ARGS="churn 10000"
expect_ok "windows nic=$churn_nic 10,000 created and freed" 2 "$churn_nic" mpi_windows --mca osc rdma
# Where a slow run was (rank 0 reports every 1,000 windows).
grep "mpi_windows churn: [0-9]* windows" <<<"$out" | tail -n 1
finish
