#!/usr/bin/env bash
# Windows and registrations, both NIC models, Open MPI's osc/rdma (mpi_windows;
# the churn of 10,000 windows is in windows_churn_<nic>.sh, one per model):
# - 1,000 windows of 4 KiB alive at once (the old 256-slot limit failed at
#   about the 129th);
# - with btl_hpam_max_registrations 64, window creation fails cleanly once
#   the slots are used up, with an error naming the parameter, and works
#   again once the windows are freed;
# every time, the registration slots in use come back to where they were.
. "$(dirname "$0")/common.sh"
HPAM_MPI_TIMEOUT=600
for nic in medusa hamlyn; do
  HPAM_PROG_ARGS="alive 1000"
  expect_ok "windows nic=$nic 1,000 alive at once" 2 $nic mpi_windows --mca osc rdma
done
HPAM_PROG_ARGS=limit
for nic in medusa hamlyn; do
  start=$SECONDS
  if hpam_run 2 $nic mpi_windows --mca osc rdma --mca btl_hpam_max_registrations 64 &&
     grep -q "mpi_windows limit: ok" <<<"$out" && grep -q "raise btl_hpam_max_registrations" <<<"$out"; then
    echo "PASS: windows nic=$nic up to btl_hpam_max_registrations 64: $(grep -o '[0-9]* windows made' <<<"$out") ($((SECONDS - start)) s)"
  else
    echo "FAIL: windows nic=$nic up to the limit:"; echo "$out" | tail -n 20; failures=$((failures + 1))
  fi
done
finish
