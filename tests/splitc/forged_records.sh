#!/usr/bin/env bash
# A hostile storer's records in Split-C's store coalescing
# (tests/splitc/forged_records.cc): malformed records, a truncated batch and
# forged counts are refused and counted, the rest of each batch applies and
# no other byte of the owner's heap changes; over vader and over hpam on both
# NIC models, at 2 and 3 ranks.
. "$(dirname "$0")/app_matrix.sh"
for np in 2 3; do
  for cfg in "vader|$vader" "medusa|$hpam --mca btl_hpam_nic medusa" "hamlyn|$hpam --mca btl_hpam_nic hamlyn"; do
    # shellcheck disable=SC2086
    expect_run ok "forged records np=$np ${cfg%%|*}" "^forged_records: ok" "$MPIRUN" -np "$np" \
      --oversubscribe --mca pml ob1 --mca mca_base_component_path "$component_path" ${cfg#*|} \
      "$HPAM_BUILDDIR/tests/splitc/forged_records"
  done
done
finish
