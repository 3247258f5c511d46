#!/usr/bin/env bash
# A sender that makes no MPI call after its send (mpi_silent_sender: it
# spins on a shared window until the receiver answers through it), with the
# wire dropping 2 % of packets: a lost hand-over must be resent although its
# sender never calls into hpam, on both cards, at 2 and 4 ranks, alone and
# with a CPU burner beside it. The runs must also show that the background
# path made the resends (btl_hpam_stats: "retransmissions N (background N, ...").
#
# HPAM_SILENT_RUNS (default 2) runs per case; `HPAM_SILENT_RUNS=50 make
# check TESTS=tests/mpi/silent_sender.sh` is the issue's 50 iterations.
. "$(dirname "$0")/common.sh"
runs=${HPAM_SILENT_RUNS:-2}
drop="--mca btl_hpam_fault_drop 0.02 --mca btl_hpam_stats 1"
background_resends=0
for load in quiet burner; do
  [ "$load" = burner ] && start_burner
  for nic in medusa hamlyn; do
    for np in 2 4; do
      for ((run = 1; run <= runs; run++)); do
        # shellcheck disable=SC2086
        HPAM_MPI_TIMEOUT=90 HPAM_PROG_ARGS="200 20" \
          expect_ok "silent sender np=$np nic=$nic $load run $run" "$np" "$nic" mpi_silent_sender $drop
        n=$(sed -n 's/.*(background \([0-9]*\),.*/\1/p' <<<"$out" | awk '{s += $1} END {print s + 0}')
        background_resends=$((background_resends + n))
      done
    done
  done
  [ "$load" = burner ] && stop_burner
done
echo "background resends in all runs: $background_resends"
if [ "$background_resends" -eq 0 ]; then
  echo "FAIL: no run needed the background path: the test did not exercise it"
  failures=$((failures + 1))
fi
finish
