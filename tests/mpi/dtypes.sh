#!/usr/bin/env bash
# Derived datatypes of every shape (mpi_dtypes: bytes, contiguous, vector,
# indexed, hindexed at unaligned displacements, 3-D subarray, struct with
# padding, struct of a 2-D subarray, resized with a negative lower bound,
# contiguous of vector, a 4-D subarray of an indexed type, an hindexed of
# 2,048 such blocks spread over 64 MiB, a 3 MiB struct of int and double)
# at packed sizes 0 B .. 4 MiB, blocking MPI_Send/MPI_Recv, every byte of
# every receive buffer checked (gaps and margins too), on both NIC models,
# without faults and with all fault kinds together. Each fault kind alone,
# one side sending or receiving the packed bytes, 4 ranks: dtypes_faults.sh.
. "$(dirname "$0")/common.sh"
# A loaded machine (CPU burners beside the test) stretches the 4 MiB sweeps
# under faults tenfold.
HPAM_MPI_TIMEOUT=${HPAM_MPI_TIMEOUT:-600}
for nic in medusa hamlyn; do
  HPAM_PROG_ARGS=
  expect_ok "dtypes nic=$nic every shape 0..4 MiB" 2 $nic mpi_dtypes
  # shellcheck disable=SC2086
  expect_ok "dtypes nic=$nic every shape 0..4 MiB, all faults" 2 $nic mpi_dtypes $dtypes_all_faults
done
finish
