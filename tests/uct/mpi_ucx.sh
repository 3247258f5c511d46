#!/usr/bin/env bash
# The project's MPI programs (point-to-point, collectives, RMA on
# MPI_Win_create windows incl. fetch-and-op and compare-and-swap) over
# Open MPI's pml ucx and osc ucx, with UCX restricted to the hpam transport
# (UCX_TLS=hpam,self: every message between ranks goes through hpam), at
# 2-4 ranks on both NIC models, and with faults injected on the wire; then a
# rank that stops answering: the job ends with an error naming the lost peer.
. "$(dirname "$0")/../mpi/common.sh"
lib="$HPAM_BUILDDIR/uct/.libs/libuct_hpam.so"
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }

# hpam_mpirun (what hpam_run and expect_ok run), here over pml ucx
# (common.sh: hpam_ucx_mpirun).
hpam_mpirun() { hpam_ucx_mpirun "$@"; }
faults=$ucx_faults

for prog in mpi_p2p mpi_coll mpi_rma; do
  for np in 2 3 4; do
    expect_ok "$prog over pml/osc ucx np=$np nic=medusa" "$np" medusa "$prog"
  done
  for np in 2 4; do
    expect_ok "$prog over pml/osc ucx np=$np nic=hamlyn" "$np" hamlyn "$prog"
  done
  for nic in medusa hamlyn; do
    # shellcheck disable=SC2086
    expect_ok "$prog over pml/osc ucx np=4 nic=$nic with faults" 4 "$nic" "$prog" $faults
  done
done

# Deposits by packets (as where the kernel forbids cross-memory attach): a
# flush must still mean the bytes are in the target's memory.
for prog in mpi_p2p mpi_rma; do
  expect_ok "$prog over pml/osc ucx np=3 nic=medusa, deposits by packets" 3 medusa "$prog" \
    -x UCX_HPAM_CROSS_MEMORY=n
done

# A rank frozen mid-run (SIGSTOP, unseen by the launcher): the survivors give
# up on it after UCX_HPAM_GIVE_UP_MS and the job ends naming the lost peer.
for nic in medusa hamlyn; do
  start=$SECONDS
  HPAM_PROG_ARGS=stop HPAM_MPI_TIMEOUT=60 hpam_run 3 "$nic" mpi_kill -x UCX_HPAM_GIVE_UP_MS=2000
  rc=$?
  took=$((SECONDS - start))
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && [ $took -lt 30 ] &&
     grep -qE "hpam: lost peer: process [0-9]+ \(pid [0-9]+\) of job" <<<"$out" &&
     ! grep -q "got past the barrier" <<<"$out"; then
    echo "PASS: frozen rank reported by name over pml ucx on $nic ($took s, exit $rc)"
  else
    echo "FAIL: frozen rank over pml ucx on $nic (exit $rc, $took s):"; echo "$out" | tail -n 25
    failures=$((failures + 1))
  fi
done
finish
