#!/usr/bin/env bash
# Soak (issue 13): all-to-all point-to-point and RMA (MPI_Win_create windows
# through osc/rdma) at depth D = 1 with 1 % of packets dropped, duplicated,
# corrupted and reordered, on both NIC models (tests/mpi/mpi_soak.c): no
# hang, no lost peer, every byte checked; each rank's resident memory may
# not grow by more than 5 % after the warm-up (the first quarter of the run)
# and the job's /dev/shm segments may change neither in number nor in bytes;
# the protocol counters must agree (retransmissions >= packets dropped, CRC
# failures <= between half and twice the corrupted packets, every fault
# kind seen). Short-lived windows are made and freed all along, in turn by
# MPI_Win_create and MPI_Win_allocate. Then the same over pml/osc ucx with
# UCX_TLS=hpam (issue 23), where MPI_Win_allocate's memory is hpam's card
# memory: a short-lived window every other round, each allocated one
# checked to lie in card memory, the card's memory churned while traffic
# and faults run (no BTL counters there). After every job nothing of it may
# be left in /dev/shm. Each model ends with a table of totals per rank and
# in all: messages and bytes sent and checked, RMA operations, windows
# churned, the transport's counters and resident memory at start and end.
#
#   tests/soak.sh [--minutes M] [--ranks N] [--nic medusa|hamlyn]
#
# By default (make check) 25 s per model (BTL on medusa and hamlyn, UCX on
# hamlyn) at 3 ranks; --minutes M runs M minutes per model (samples every
# M*60/60 s, at least every 2 s); --nic runs the BTL and UCX on that model.
. "$(dirname "$0")/mpi/common.sh"
# AddressSanitizer keeps freed memory in a quarantine (256 MB by default)
# that reads as resident growth: in a sanitizer build the RSS check runs
# without it (use-after-free is still caught, only not after a later reuse).
[ -n "$sanitizer_preload" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0"
seconds=25 np=3 models="btl:medusa btl:hamlyn ucx:hamlyn" growth=5
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) seconds=$(awk -v m="$2" 'BEGIN {printf "%d", m * 60}'); shift 2 ;;
    --ranks) np=$2; shift 2 ;;
    --nic) models="btl:$2 ucx:$2"; shift 2 ;;
    *) echo "usage: $0 [--minutes M] [--ranks N] [--nic medusa|hamlyn]" >&2; exit 2 ;;
  esac
done
interval=$(( seconds / 60 > 2 ? seconds / 60 : 2 ))
soak_mca="--mca btl_hpam_depth 1 --mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.01 --mca btl_hpam_timeout_us 200 --mca osc rdma"
# Over UCX every interface prints its counters when it closes (STATS, at
# UCX's info level); ucx_faults_seen sums them: every fault kind happened,
# retransmissions >= packets dropped, CRC failures seen.
ucx_mca="-x UCX_HPAM_DEPTH=1 $ucx_faults -x UCX_HPAM_STATS=y -x UCX_LOG_LEVEL=info"
ucx_faults_seen() {
  grep -o "retransmissions [0-9]*.*crc failures [0-9]*.*wire: dropped [0-9]* duplicated [0-9]* corrupted [0-9]* reordered [0-9]*" <<<"$out" |
    awk '{ for (i = 1; i < NF; ++i) s[$i] += $(i + 1) }
         END { printf "mpi_soak: UCX transport counters: retransmissions %d, CRC failures %d, wire dropped %d, duplicated %d, corrupted %d, reordered %d\n", s["retransmissions"], s["failures"], s["dropped"], s["duplicated"], s["corrupted"], s["reordered"]
               exit !(s["dropped"] && s["duplicated"] && s["corrupted"] && s["reordered"] && s["failures"] && s["retransmissions"] >= s["dropped"]) }'
}
# left_in_shm: the names in /dev/shm of the job whose prefix the run printed.
left_in_shm() {
  local prefix
  prefix=$(sed -n 's/^mpi_soak: segment prefix //p' <<<"$out" | head -n 1)
  [ -n "$prefix" ] && ls /dev/shm | grep -F "$prefix" | head -n 5
}
for model in $models; do
  start=$SECONDS nic=${model#*:}
  # A slow machine stretches the last round, not the run: 2 min of slack.
  HPAM_MPI_TIMEOUT=$((seconds + 120))
  if [ "${model%%:*}" = btl ]; then
    # shellcheck disable=SC2086
    HPAM_PROG_ARGS="-t $seconds -i $interval -g $growth -f" hpam_run "$np" "$nic" mpi_soak $soak_mca
    rc=$?
  else
    # shellcheck disable=SC2086
    out=$(HPAM_PROG_ARGS="-t $seconds -i $interval -g $growth -u -c -w 2" \
      hpam_ucx_mpirun "$np" "$nic" mpi_soak $ucx_mca 2>&1)
    rc=$?
    seen=$(ucx_faults_seen) || rc=1
    out+=$'\n'$seen
  fi
  grep "mpi_soak: " <<<"$out" | grep -v " s: " | sed "s/^/$model: /"
  left=$(left_in_shm)
  if [ $rc -eq 0 ] && grep -q "mpi_soak: ok" <<<"$out" && ! grep -q "lost peer" <<<"$out" &&
     [ -z "$left" ]; then
    echo "PASS: soak $model np=$np ${seconds} s at D = 1 under faults, nothing left in /dev/shm ($((SECONDS - start)) s)"
  else
    echo "FAIL: soak $model np=$np (exit $rc)"
    [ -n "$left" ] && echo "left in /dev/shm after the job: $left"
    echo "$out" | tail -n 40
    failures=$((failures + 1))
  fi
done
finish
