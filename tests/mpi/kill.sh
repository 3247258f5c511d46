#!/usr/bin/env bash
# A rank killed mid-run: the survivors end with an error naming the lost peer
# within the configured give-up time (2 s here), on both NIC models.
. "$(dirname "$0")/common.sh"
killed_jobs=
# how: kill (SIGKILL; the launcher is told to carry on) or stop (SIGSTOP).
check_lost() {
  local nic=$1 how=$2
  shift 2
  local start=$SECONDS rc
  HPAM_MPI_TIMEOUT=60 hpam_run 3 "$nic" mpi_kill "$@" --mca btl_hpam_give_up_ms 2000
  rc=$?
  local took=$((SECONDS - start))
  # The job must end (not time out), name the lost peer, and never get past the barrier.
  killed_jobs+=" $(grep -o 'of job [^ ]*' <<<"$out" | head -n1 | cut -d' ' -f3)"
  if [ $rc -ne 124 ] && [ $rc -ne 137 ] && grep -q "btl/hpam: lost peer .*local rank 2" <<<"$out" &&
     ! grep -q "got past the barrier" <<<"$out" && [ $took -lt 30 ]; then
    echo "PASS: $how rank reported by name on $nic ($took s, exit $rc)"
  else
    echo "FAIL: $how rank on $nic (exit $rc, $took s):"; echo "$out" | tail -n 25; failures=$((failures + 1))
  fi
}
for nic in medusa hamlyn; do
  check_lost $nic killed --enable-recovery
done
# A frozen rank goes unnoticed by the launcher: only hpam's give-up ends the job.
HPAM_PROG_ARGS=stop
for nic in medusa hamlyn; do
  check_lost $nic stopped
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
