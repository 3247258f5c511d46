#!/usr/bin/env bash
# Protocol counters as MPI_T performance variables; every parameter listed
# by ompi_info with its help; statistics at finalize.
. "$(dirname "$0")/common.sh"
expect_ok "MPI_T pvars" 2 medusa mpi_pvars
n=$(LD_PRELOAD="$sanitizer_preload" OMPI_MCA_mca_base_component_path="$component_path" ompi_info --param btl hpam --level 9 | grep -c "MCA btl hpam: parameter \"btl_hpam_")
if [ "$n" -ge 25 ]; then echo "PASS: ompi_info lists $n btl_hpam parameters"; else echo "FAIL: ompi_info lists $n btl_hpam parameters"; failures=$((failures + 1)); fi
hpam_run 2 medusa mpi_pvars --mca btl_hpam_stats 1
if grep -q "btl/hpam stats: local rank 0 -> 1: requests" <<<"$out"; then echo "PASS: statistics at finalize"; else echo "FAIL: no statistics at finalize"; echo "$out" | tail; failures=$((failures + 1)); fi
# The BTL's sizes follow the card: 32 KiB blocks unless set; depth from
# the card budget (32 MiB of 32 KiB blocks: 64 at 2 ranks, 16 at 9; 64 MiB:
# 32 at 9; 8 MiB of 8 KiB blocks: 16 at 9), eager limit and max send size
# the block's payload (block - 64), unless set.
sizes() {  # sizes NP [args...]: the verbose setup line of local rank 0
  local np=$1
  shift
  hpam_run "$np" medusa mpi_pvars --mca btl_hpam_verbose 1 "$@"
  grep -o "local rank 0 of $np: nic medusa, depth [0-9]*, block [0-9]* bytes, eager limit [0-9]*, max send size [0-9]*" <<<"$out" | head -1
}
expect_sizes() {  # expect_sizes NAME WANT NP [args...]
  local name=$1 want=$2
  shift 2
  local got
  got=$(sizes "$@")
  if [ "$got" = "$want" ]; then echo "PASS: $name"; else echo "FAIL: $name: got '$got', want '$want'"; failures=$((failures + 1)); fi
}
expect_sizes "sizes at 2 ranks" "local rank 0 of 2: nic medusa, depth 64, block 32768 bytes, eager limit 32704, max send size 32704" 2
expect_sizes "depth at 9 ranks" "local rank 0 of 9: nic medusa, depth 16, block 32768 bytes, eager limit 32704, max send size 32704" 9
expect_sizes "depth at 9 ranks, 64 MiB card" "local rank 0 of 9: nic medusa, depth 32, block 32768 bytes, eager limit 32704, max send size 32704" 9 \
  --mca btl_hpam_card_budget_mb 64
expect_sizes "depth at 9 ranks, 8 MiB card of 8 KiB blocks" "local rank 0 of 9: nic medusa, depth 16, block 8192 bytes, eager limit 8128, max send size 8128" 9 \
  --mca btl_hpam_card_budget_mb 8 --mca btl_hpam_block_size 8192
expect_sizes "depth and sizes set by the user" "local rank 0 of 2: nic medusa, depth 8, block 16384 bytes, eager limit 4096, max send size 16320" 2 \
  --mca btl_hpam_depth 8 --mca btl_hpam_block_size 16384 --mca btl_hpam_eager_limit 4096
finish
