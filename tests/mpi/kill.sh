#!/usr/bin/env bash
# A rank killed (or stopped) mid-run while rank 0 keeps sending to it: the
# survivors end with an error naming the lost peer and what was seen of it,
# within the give-up time (2 s here) + 8 s of its death, on both NIC models
# (the slack is for a loaded machine: the bound tells hpam's give-up from
# the 60 s limit of a hung job, it does not time hpam).
. "$(dirname "$0")/common.sh"
killed_jobs=
give_up_ms=2000
# Like hpam_run, each line of output prefixed with when it arrived (s).
stamped_run() {
  out=$({ HPAM_MPI_TIMEOUT=60 hpam_mpirun "$@" 2>&1; echo "exit status $?"; } |
        while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done)
}
# Seconds from the first line matching $1 to the first matching $2 (or 999).
between() {
  awk -v a="$1" -v b="$2" '!ta && $0 ~ a {ta = $1} ta && !tb && $0 ~ b {tb = $1}
    END {if (ta && tb) printf "%.2f", tb - ta; else print 999}' <<<"$out"
}
# how: kill (SIGKILL; the launcher is told to carry on) or stop (SIGSTOP);
# seen: what the report must say about the victim.
check_lost() {
  local nic=$1 how=$2 seen=$3
  shift 3
  stamped_run 3 "$nic" mpi_kill "$@" --mca btl_hpam_give_up_ms $give_up_ms
  local rc latency
  rc=$(sed -n 's/.* exit status //p' <<<"$out" | tail -n1)
  latency=$(between "rank 2 dies now" "btl/hpam: lost peer .*local rank 2")
  # The job must end (not time out), name the lost peer and what was seen,
  # never get past the barrier, and report within the give-up time + 8 s.
  killed_jobs+=" $(grep -o 'of job [^ ]*' <<<"$out" | head -n1 | cut -d' ' -f3)"
  if [ "$rc" != 124 ] && [ "$rc" != 137 ] && grep -q "btl/hpam: lost peer .*local rank 2.*$seen" <<<"$out" &&
     ! grep -q "got past the barrier" <<<"$out" &&
     awk -v l="$latency" -v g=$give_up_ms 'BEGIN {exit !(l <= g / 1000 + 8)}'; then
    echo "PASS: $how rank reported by name on $nic ${latency} s after it stopped answering (exit $rc)"
  else
    echo "FAIL: $how rank on $nic (exit $rc, reported after $latency s):"; echo "$out" | tail -n 25
    failures=$((failures + 1))
  fi
}
for nic in medusa hamlyn; do
  check_lost $nic killed "has exited" --enable-recovery
done
# A frozen rank goes unnoticed by the launcher: only hpam's give-up ends the job.
HPAM_PROG_ARGS=stop
for nic in medusa hamlyn; do
  check_lost $nic stopped "is stopped"
done
# The killed jobs left shared segments behind; a later job removes them once
# their creators are gone (the killed processes may take a moment to be
# reaped), so try a few later jobs a second apart.
HPAM_PROG_ARGS=
left_of_killed() {
  local n=0 job
  for job in $killed_jobs; do n=$((n + $(ls /dev/shm | grep -c -- "$job" || true))); done
  echo $n
}
for attempt in 1 2 3 4 5; do
  expect_ok "a later job ($attempt)" 2 hamlyn mpi_p2p
  [ "$(left_of_killed)" -eq 0 ] && break
  sleep 1
done
if [ -n "$killed_jobs" ] && [ "$(left_of_killed)" -eq 0 ]; then
  echo "PASS: segments of the killed jobs were removed by a later job"
else
  echo "FAIL: $(left_of_killed) segments of killed jobs ($killed_jobs) remain"; failures=$((failures + 1))
fi
finish
