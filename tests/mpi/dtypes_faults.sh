#!/usr/bin/env bash
# Derived datatypes (mpi_dtypes, see dtypes.sh) under faults, on both NIC
# models, every byte of every receive buffer checked:
# - each fault kind alone (drop, duplicate, corrupt, reorder, delay; 2 %
#   each): the large nested types (an hindexed of 2,048 4-D subarrays of an
#   indexed type over 64 MiB, a 3 MiB struct, a struct of 2-D subarrays)
#   and one other shape swept over packed sizes 0 B .. 4 MiB, a different
#   one for each fault kind and model, so every shape meets some fault alone;
# - all faults together with one side sending or receiving the packed bytes
#   as MPI_BYTE (0 .. 1 MiB), and the nested types at 4 ranks.
. "$(dirname "$0")/common.sh"
big_ones="-s wide,struct_3m,struct_subarray_1m"
sweeps="vector indexed hindexed subarray struct contiguous struct_subarray resized contig_vector nested"
HPAM_MPI_TIMEOUT=${HPAM_MPI_TIMEOUT:-600}
for nic in medusa hamlyn; do
  for fault in drop duplicate corrupt reorder delay; do
    sweep=${sweeps%% *} sweeps="${sweeps#* } $sweep"
    HPAM_PROG_ARGS="$big_ones,$sweep"
    expect_ok "dtypes nic=$nic nested types and $sweep 0..4 MiB, $fault only" 2 $nic mpi_dtypes \
      --mca btl_hpam_fault_$fault 0.02 --mca btl_hpam_timeout_us 200
  done
  for side in send recv; do
    HPAM_PROG_ARGS="-p $side -m 1048576"
    # shellcheck disable=SC2086
    expect_ok "dtypes nic=$nic packed on the $side side, all faults" 2 $nic mpi_dtypes $dtypes_all_faults
  done
  HPAM_PROG_ARGS="$big_ones"
  # shellcheck disable=SC2086
  expect_ok "dtypes np=4 nic=$nic nested types, all faults" 4 $nic mpi_dtypes $dtypes_all_faults
done
finish
