#!/usr/bin/env bash
# Overload and busy peers, both NIC models (mpi_overload):
# - a sender flooding a peer that sleeps outside MPI keeps its resident
#   memory bounded and keeps serving a third rank;
# - 20 MPI_Sends followed by a sleep outside MPI: all 20 arrive while the
#   sender sleeps.
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  HPAM_PROG_ARGS="flood 200000 3"
  expect_ok "overload nic=$nic flood of a sleeping peer" 3 $nic mpi_overload
  HPAM_PROG_ARGS="send_sleep 5"
  expect_ok "overload nic=$nic 20 sends, then the sender sleeps" 2 $nic mpi_overload
done
finish
