#!/usr/bin/env bash
# Overload and busy peers, both NIC models (mpi_overload):
# - a sender flooding a peer that sleeps outside MPI keeps its resident
#   memory bounded and keeps serving a third rank;
# - 20 MPI_Sends followed by a sleep outside MPI: all 20 arrive while the
#   sender sleeps;
# - a rank that computes for 3 times the give-up time, without MPI calls,
#   while a message to it is in flight: the job completes (a peer that
#   computes is not a dead one; kill.sh shows that a dead or stopped one is
#   still reported).
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  # 50,000 sends of 256 B: a copy each would take 220 MB (the old sendi);
  # their pace depends on the machine's load, hence the longer time limit.
  HPAM_PROG_ARGS="flood 50000 3" HPAM_MPI_TIMEOUT=400
  expect_ok "overload nic=$nic flood of a sleeping peer" 3 $nic mpi_overload
  HPAM_PROG_ARGS="send_sleep 5"
  expect_ok "overload nic=$nic 20 sends, then the sender sleeps" 2 $nic mpi_overload
  HPAM_PROG_ARGS="compute 3"
  expect_ok "overload nic=$nic receiver computes 3 s, give-up 1 s" 2 $nic mpi_overload \
    --mca btl_hpam_give_up_ms 1000
done
finish
