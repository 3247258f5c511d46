#!/usr/bin/env bash
# Derived datatypes (mpi_dtypes, see dtypes.sh) under each fault kind alone
# (drop, duplicate, corrupt, reorder, delay; 2 % each), on both NIC models:
# the large nested types (an hindexed of 2,048 4-D subarrays of an indexed
# type over 64 MiB, a 3 MiB struct, a struct of 2-D subarrays), and one
# other shape swept over packed sizes 0 B .. 4 MiB, a different one for
# each fault kind and model, so every shape meets some fault alone; every
# byte of every receive buffer checked.
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
done
finish
