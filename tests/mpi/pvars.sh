#!/usr/bin/env bash
# Protocol counters as MPI_T performance variables; every parameter listed
# by ompi_info with its help; statistics at finalize.
. "$(dirname "$0")/common.sh"
expect_ok "MPI_T pvars" 2 medusa mpi_pvars
n=$(LD_PRELOAD="$sanitizer_preload" OMPI_MCA_mca_base_component_path="$component_path" ompi_info --param btl hpam --level 9 | grep -c "MCA btl hpam: parameter \"btl_hpam_")
if [ "$n" -ge 25 ]; then echo "PASS: ompi_info lists $n btl_hpam parameters"; else echo "FAIL: ompi_info lists $n btl_hpam parameters"; failures=$((failures + 1)); fi
hpam_run 2 medusa mpi_pvars --mca btl_hpam_stats 1
if grep -q "btl/hpam stats: local rank 0 -> 1: requests" <<<"$out"; then echo "PASS: statistics at finalize"; else echo "FAIL: no statistics at finalize"; echo "$out" | tail; failures=$((failures + 1)); fi
finish
