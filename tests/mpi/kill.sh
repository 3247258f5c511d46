#!/usr/bin/env bash
# A rank killed mid-run: the survivors end with an error naming the lost peer
# within the configured give-up time (2 s here), on both NIC models.
. "$(dirname "$0")/common.sh"
for nic in medusa hamlyn; do
  start=$SECONDS
  HPAM_MPI_TIMEOUT=60 hpam_run 3 $nic mpi_kill --enable-recovery --mca btl_hpam_give_up_ms 2000
  rc=$?
  took=$((SECONDS - start))
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "btl/hpam: lost peer .*local rank 2" <<<"$out" && [ $took -lt 30 ]; then
    echo "PASS: killed rank reported by name on $nic ($took s)"
  else
    echo "FAIL: killed rank on $nic (exit $rc, $took s):"; echo "$out" | tail -n 25; failures=$((failures + 1))
  fi
done
finish
