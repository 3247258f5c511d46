#!/usr/bin/env bash
# Derived datatypes of every shape (mpi_dtypes: bytes, contiguous, vector,
# indexed, hindexed at unaligned displacements, 3-D subarray, struct with
# padding, struct of a 2-D subarray, resized with a negative lower bound,
# contiguous of vector, a 4-D subarray of an indexed type, an hindexed of
# 2,048 such blocks spread over 64 MiB, a 3 MiB struct of int and double)
# at packed sizes 0 B .. 4 MiB, blocking MPI_Send/MPI_Recv, every byte of
# every receive buffer checked (gaps and margins too), on both NIC models:
# without faults and with all fault kinds together; also with one side
# sending or receiving the packed bytes as MPI_BYTE. Each fault kind alone:
# dtypes_faults.sh.
. "$(dirname "$0")/common.sh"
all_faults="--mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.02 --mca btl_hpam_fault_delay 0.01 \
--mca btl_hpam_timeout_us 200"
big_ones="-s wide,struct_3m,struct_subarray_1m"
# A loaded machine (CPU burners beside the test) stretches the 4 MiB sweeps
# under faults tenfold.
HPAM_MPI_TIMEOUT=${HPAM_MPI_TIMEOUT:-600}
for nic in medusa hamlyn; do
  HPAM_PROG_ARGS=
  expect_ok "dtypes nic=$nic every shape 0..4 MiB" 2 $nic mpi_dtypes
  # shellcheck disable=SC2086
  expect_ok "dtypes nic=$nic every shape 0..4 MiB, all faults" 2 $nic mpi_dtypes $all_faults
  for side in send recv; do
    HPAM_PROG_ARGS="-p $side -m 1048576"
    # shellcheck disable=SC2086
    expect_ok "dtypes nic=$nic packed on the $side side, all faults" 2 $nic mpi_dtypes $all_faults
  done
  HPAM_PROG_ARGS="$big_ones"
  # shellcheck disable=SC2086
  expect_ok "dtypes np=4 nic=$nic nested types, all faults" 4 $nic mpi_dtypes $all_faults
done
finish
