#!/usr/bin/env bash
# Soak (issue 13): all-to-all point-to-point and RMA (MPI_Win_create windows
# through osc/rdma) at depth D = 1 with 1 % of packets dropped, duplicated,
# corrupted and reordered, on both NIC models (tests/mpi/mpi_soak.c): no
# hang, no lost peer, every byte checked; each rank's resident memory may
# not grow by more than 5 % after the warm-up (the first quarter of the run)
# and the job's /dev/shm segments may not change in number; the protocol
# counters must agree (retransmissions >= packets dropped, CRC failures <=
# between half and twice the corrupted packets, every fault kind seen).
# Each model ends with a table of totals per rank and in all: messages and
# bytes sent and checked, RMA operations, windows churned, the transport's
# counters and resident memory at start and end.
#
#   tests/soak.sh [--minutes M] [--ranks N] [--nic medusa|hamlyn]
#
# By default (make check) 25 s per NIC model at 3 ranks; --minutes M runs M
# minutes per model (samples every M*60/60 s, at least every 2 s).
. "$(dirname "$0")/mpi/common.sh"
# AddressSanitizer keeps freed memory in a quarantine (256 MB by default)
# that reads as resident growth: in a sanitizer build the RSS check runs
# without it (use-after-free is still caught, only not after a later reuse).
[ -n "$sanitizer_preload" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0"
seconds=25 np=3 nics="medusa hamlyn" growth=5
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) seconds=$(awk -v m="$2" 'BEGIN {printf "%d", m * 60}'); shift 2 ;;
    --ranks) np=$2; shift 2 ;;
    --nic) nics=$2; shift 2 ;;
    *) echo "usage: $0 [--minutes M] [--ranks N] [--nic medusa|hamlyn]" >&2; exit 2 ;;
  esac
done
interval=$(( seconds / 60 > 2 ? seconds / 60 : 2 ))
soak_mca="--mca btl_hpam_depth 1 --mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.01 --mca btl_hpam_timeout_us 200 --mca osc rdma"
for nic in $nics; do
  start=$SECONDS
  # A slow machine stretches the last round, not the run: 2 min of slack.
  HPAM_PROG_ARGS="-t $seconds -i $interval -g $growth -f" HPAM_MPI_TIMEOUT=$((seconds + 120))
  # shellcheck disable=SC2086
  hpam_run "$np" "$nic" mpi_soak $soak_mca
  rc=$?
  grep "mpi_soak: " <<<"$out" | grep -v " s: " | sed "s/^/$nic: /"
  if [ $rc -eq 0 ] && grep -q "mpi_soak: ok" <<<"$out" && ! grep -q "lost peer" <<<"$out"; then
    echo "PASS: soak nic=$nic np=$np ${seconds} s at D = 1 under faults ($((SECONDS - start)) s)"
  else
    echo "FAIL: soak nic=$nic np=$np (exit $rc)"
    echo "$out" | tail -n 40
    failures=$((failures + 1))
  fi
done
finish
