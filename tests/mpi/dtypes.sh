#!/usr/bin/env bash
# Derived datatypes of every shape (mpi_dtypes: contiguous, vector, indexed,
# struct with padding, struct of a 2-D subarray, resized with a negative lower
# bound, contiguous of vector, a 4-D subarray of an indexed type, an hindexed
# of 2,048 such blocks spread over 64 MiB, a 3 MiB struct of int and double)
# at packed sizes 0 B .. 4 MiB, blocking MPI_Send/MPI_Recv, every byte of
# every receive buffer checked (gaps and margins too), on both NIC models:
# without faults, with each fault kind alone, and with all of them together;
# also with one side sending or receiving the packed bytes as MPI_BYTE.
. "$(dirname "$0")/common.sh"
all_faults="--mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.02 --mca btl_hpam_fault_delay 0.01 \
--mca btl_hpam_timeout_us 200"
big_ones="-s wide,struct_3m,struct_subarray_1m"
for nic in medusa hamlyn; do
  HPAM_PROG_ARGS=
  expect_ok "dtypes nic=$nic every shape 0..4 MiB" 2 $nic mpi_dtypes
  # shellcheck disable=SC2086
  expect_ok "dtypes nic=$nic every shape 0..4 MiB, all faults" 2 $nic mpi_dtypes $all_faults
  for fault in drop duplicate corrupt reorder delay; do
    HPAM_PROG_ARGS="$big_ones"
    expect_ok "dtypes nic=$nic nested types, $fault only" 2 $nic mpi_dtypes \
      --mca btl_hpam_fault_$fault 0.02 --mca btl_hpam_timeout_us 200
  done
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
