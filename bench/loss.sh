#!/usr/bin/env bash
# Loss recovery, measured: whole-run times of bench/mpi_flood (never medians
# of bursts, which would leave a loss's stall out) over hpam under the
# wire's faults, beside the same figures on a clean wire in the same run;
# the default loss recovery (adaptive timeout, early resend) beside HPAM's
# fixed timeout alone (btl_hpam_adaptive_timeout 0, btl_hpam_early_resend 0).
# bench/run's "under loss" step; alone:
#   bench/loss.sh [--quick] [--build DIR] [--out DIR]
# then `python3 bench/report/loss.py DIR` prints the RESULTS.md section and
# `gnuplot -e "dir='DIR'" bench/loss_plots.gp` draws DIR/loss_sweep.png.
# Writes DIR/loss.csv:
#   condition,timer,load,mode,ranks,bytes,seconds,per_second,retransmissions,early,spurious,timeouts,deferred
# (per_second: messages per second, or the mean one-way latency in us for
# pingpong; the last five per message, from hpam's counters), and
# DIR/loss_sweep.csv: timer,drop,bandwidth_MBps,latency_us.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/_build out=$top/bench/results quick=''
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "usage: bench/loss.sh [--quick] [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
prog=$build/bench/mpi_flood
[ -x "$prog" ] || { echo "bench/loss.sh: $prog missing: build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cpath="$build/btl/component:$(ls -d /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3)"
runs=3 stream_n=20000 rate_n=100000 flood_n=100000 pp_n=20000 sweep_n=5000
[ -n "$quick" ] && runs=1 stream_n=5000 rate_n=20000 flood_n=20000 pp_n=5000 sweep_n=2000
drop1="--mca btl_hpam_fault_drop 0.01"
mix="--mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.02"
fixed="--mca btl_hpam_adaptive_timeout 0 --mca btl_hpam_early_resend 0"

# one NP ARGS_FOR_MPIRUN -- PROGRAM_ARGS: one run's CSV line (without "mode,")
one() {
  local np=$1
  shift
  local mca=()
  while [ "$1" != -- ]; do mca+=("$1"); shift; done
  shift
  # shellcheck disable=SC2068
  timeout 600 mpirun -np "$np" --oversubscribe --bind-to none --mca pml ob1 --mca btl hpam,self \
    --mca mca_base_component_path "$cpath" ${mca[@]} "$prog" "$@" 2>/dev/null | grep -E '^(flood|stream|pingpong),' || true
}
burner_pid=
trap '[ -n "$burner_pid" ] && kill "$burner_pid" 2>/dev/null; true' EXIT
# measure CONDITION TIMER LOAD NP MCA... -- ARGS: $runs runs, one CSV line each
measure() {
  local condition=$1 timer=$2 load=$3 np=$4
  shift 4
  if [ "$load" = burner ]; then timeout 900 bash -c 'while :; do :; done' & burner_pid=$!; fi
  for ((r = 0; r < runs; r++)); do
    local line
    line=$(one "$np" "$@")
    [ -n "$line" ] && echo "$condition,$timer,$load,$line"
  done
  if [ -n "$burner_pid" ]; then kill "$burner_pid" 2>/dev/null || true; wait "$burner_pid" 2>/dev/null || true; burner_pid=; fi
}

{
  echo "condition,timer,load,mode,ranks,bytes,seconds,per_second,retransmissions,early,spurious,timeouts,deferred"
  for w in "stream $stream_n 16384" "stream $rate_n 8" "pingpong $pp_n"; do
    # shellcheck disable=SC2086
    {
      measure clean adaptive quiet 2 -- $w
      measure drop1 adaptive quiet 2 $drop1 -- $w
      measure drop1 fixed quiet 2 $drop1 $fixed -- $w
      measure mix adaptive quiet 2 $mix -- $w
      measure mix fixed quiet 2 $mix $fixed -- $w
    }
  done
  for np in 2 4 8; do
    # shellcheck disable=SC2086
    {
      measure clean adaptive quiet $np -- flood $flood_n
      measure mix adaptive quiet $np $mix -- flood $flood_n
      measure mix fixed quiet $np $mix $fixed -- flood $flood_n
    }
  done
  # Spurious resends with a CPU burner beside the ranks.
  # shellcheck disable=SC2086
  {
    measure clean adaptive burner 2 -- flood $flood_n
    measure mix adaptive burner 2 $mix -- flood $flood_n
  }
} > "$out/loss.csv"

# Bandwidth (16 KiB stream) and latency (8-byte round trips) against the
# drop rate, the fixed timeout beside the adaptive one: one run each.
{
  echo "timer,drop,bandwidth_MBps,latency_us"
  for drop in 0 0.001 0.003 0.01 0.03 0.1; do
    for timer in adaptive fixed; do
      t=''
      [ "$timer" = fixed ] && t=$fixed
      # shellcheck disable=SC2086
      bw=$(one 2 --mca btl_hpam_fault_drop $drop $t -- stream $sweep_n 16384 | awk -F, '{printf "%.1f", $5 * $3 / 1e6}')
      # shellcheck disable=SC2086
      lat=$(one 2 --mca btl_hpam_fault_drop $drop $t -- pingpong $sweep_n | awk -F, '{print $5}')
      echo "$timer,$drop,${bw:-},${lat:-}"
    done
  done
} > "$out/loss_sweep.csv"
