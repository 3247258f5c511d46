#!/usr/bin/env bash
# A bad parameter gives a clear error naming it and its valid range, and the
# job ends (non-zero, no hang).
. "$(dirname "$0")/common.sh"
check_bad() {
  local what=$1 expect=$2
  shift 2
  local start=$SECONDS
  if HPAM_MPI_TIMEOUT=60 hpam_run 2 "${nic:-medusa}" mpi_p2p "$@"; then
    echo "FAIL: $what: the job succeeded"; failures=$((failures + 1)); return
  fi
  if grep -q -- "$expect" <<<"$out" && [ $((SECONDS - start)) -lt 60 ]; then
    echo "PASS: $what"
  else
    echo "FAIL: $what: no '$expect' in:"; echo "$out" | tail -n 20; failures=$((failures + 1))
  fi
}
check_bad "depth 0" "btl_hpam_depth = 0: valid range is \[1, 64\]" --mca btl_hpam_depth 0
# With tcp available too, the job must still end instead of running on over tcp.
if out=$(timeout -k 5 60 "$MPIRUN" -np 2 --mca pml ob1 --mca btl hpam,tcp,self \
           --mca mca_base_component_path "$component_path" --mca btl_hpam_depth 0 \
           "$HPAM_BUILDDIR/tests/mpi/mpi_p2p" 2>&1); then
  echo "FAIL: depth 0 with tcp available: the job succeeded"; failures=$((failures + 1))
elif [ $? -ge 124 ] || ! grep -q "btl_hpam_depth = 0: valid range is \[1, 64\]" <<<"$out"; then
  echo "FAIL: depth 0 with tcp available:"; echo "$out" | tail -n 20; failures=$((failures + 1))
else
  echo "PASS: depth 0 with tcp available"
fi
check_bad "block size 1000" "btl_hpam_block_size = 1000: valid values are powers of two" --mca btl_hpam_block_size 1000
check_bad "fault_drop 2" "btl_hpam_fault_drop = 2: valid range is \[0, 1\]" --mca btl_hpam_fault_drop 2
check_bad "eager_limit above the packet" "btl_hpam_eager_limit = 100000: valid range is \[1, [0-9]*\]" --mca btl_hpam_eager_limit 100000
check_bad "max_send_size above the packet" "btl_hpam_max_send_size = 1000000: valid range is \[1, [0-9]*\]" --mca btl_hpam_max_send_size 1000000
check_bad "give_up_ms -5 (one message, no follow-on error)" "btl_hpam_give_up_ms = -5: valid range is \[1, 3600000\]" --mca btl_hpam_give_up_ms -5
if grep -q "btl_hpam_timeout_us" <<<"$out"; then
  echo "FAIL: a bad give_up_ms also blamed timeout_us"; failures=$((failures + 1))
fi
check_bad "rx_ready_cell 100" "btl_hpam_rx_ready_cell = 100: valid values are powers of two" --mca btl_hpam_rx_ready_cell 100
nic=hamlyn check_bad "notify_inline 481" "btl_hpam_notify_inline = 481: valid range is \[0, 480\]" --mca btl_hpam_notify_inline 481
check_bad "card_budget_mb 0" "btl_hpam_card_budget_mb = 0: valid range is \[1, 65536\]" --mca btl_hpam_card_budget_mb 0
check_bad "max_frags 8" "btl_hpam_max_frags = 8: valid range is \[16, 1048576\]" --mca btl_hpam_max_frags 8
check_bad "max_registrations above the Hamlyn slot table" "btl_hpam_max_registrations = 100000: valid range is \[16, 65536\]" --mca btl_hpam_max_registrations 100000
# Sizes left at their defaults shrink to a smaller packet instead of failing.
expect_ok "block_size 1024 with default sizes" 2 medusa mpi_p2p --mca btl_hpam_block_size 1024
nic=token-ring check_bad "nic token-ring" "btl_hpam_nic = token-ring: valid values are medusa, hamlyn"
finish
