# Shared by the application tests: run one bench/apps program at small size
# over vader, over hpam on both NIC models, and over hpam with faults, at 2
# and 4 ranks; the program checks its own answer and prints "<app>: ok".
#
# One-sided transport (osc): hpam runs force osc/rdma, so MPI RMA provably
# goes through hpam's put/get/atomics (osc/rdma refuses a BTL without RDMA
# and atomics to every peer). vader runs use osc/pt2pt (RMA as messages over
# ob1 and vader): Debian's Open MPI 4.1.4 crashes in MPI_Compare_and_swap
# under osc/rdma over vader, and its default without osc/rdma is osc/ucx,
# which would bypass the BTL altogether.
. "$(dirname "$0")/../mpi/common.sh"

# app_expect NAME NP "BTL ARGS" PROGRAM [ARGS...]: stdout+stderr in $out
app_expect() {
  local name=$1 np=$2 btl=$3 prog=$4
  shift 4
  local start=$SECONDS
  # shellcheck disable=SC2086
  out=$(timeout -k 5 "${HPAM_MPI_TIMEOUT:-120}" "$MPIRUN" -np "$np" --oversubscribe --mca pml ob1 \
        --mca mca_base_component_path "$component_path" $btl "$HPAM_BUILDDIR/bench/apps/$prog" "$@" 2>&1)
  if [ $? -eq 0 ] && grep -q "^$prog: ok" <<<"$out"; then
    echo "PASS: $name ($((SECONDS - start)) s)"
  else
    echo "FAIL: $name"
    echo "$out" | tail -n 30
    failures=$((failures + 1))
  fi
}

vader="--mca btl vader,self --mca osc pt2pt"
hpam="--mca btl hpam,self --mca osc rdma"

# app_matrix PROGRAM [ARGS...]: the whole matrix, then one run with --break 1
# that must fail (the program's check can fail).
app_matrix() {
  local prog=$1 np nic
  shift
  for np in 2 4; do
    app_expect "$prog np=$np vader" "$np" "$vader" "$prog" "$@"
    for nic in medusa hamlyn; do
      app_expect "$prog np=$np hpam nic=$nic" "$np" "$hpam --mca btl_hpam_nic $nic" "$prog" "$@"
      app_expect "$prog np=$np hpam nic=$nic with faults" "$np" "$hpam --mca btl_hpam_nic $nic $faults" "$prog" "$@"
    done
  done
  # shellcheck disable=SC2086
  out=$(timeout -k 5 120 "$MPIRUN" -np 2 --mca pml ob1 --mca mca_base_component_path "$component_path" \
        $hpam "$HPAM_BUILDDIR/bench/apps/$prog" "$@" --break 1 2>&1)
  if [ $? -ne 0 ] && grep -q "^$prog: FAILED" <<<"$out"; then
    echo "PASS: $prog --break 1 is caught by its own check"
  else
    echo "FAIL: $prog --break 1 was not caught"
    echo "$out" | tail -n 10
    failures=$((failures + 1))
  fi
}
