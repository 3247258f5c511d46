#!/usr/bin/env bash
# MPI_THREAD_MULTIPLE: concurrent senders in every rank, both NIC models,
# with and without faults.
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  expect_ok "threads np=2 nic=$nic" 2 $nic mpi_threads
  # shellcheck disable=SC2086
  expect_ok "threads np=3 nic=$nic with faults" 3 $nic mpi_threads $faults
done
finish
