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

. "$(dirname "$0")/../common/expect.sh"
HPAM_RUN_TIMEOUT=${HPAM_MPI_TIMEOUT:-120}

# app_run WANT NAME NP "MPIRUN ARGS" PROGRAM [ARGS...]: WANT ok or fail, and
# the program's verdict line must say so.
app_run() {
  local want=$1 name=$2 np=$3 args=$4 prog=$5 verdict=ok
  shift 5
  [ "$want" = ok ] || verdict=FAILED
  # shellcheck disable=SC2086
  expect_run "$want" "$name" "^$prog: $verdict" "$MPIRUN" -np "$np" --oversubscribe --mca pml ob1 \
    --mca mca_base_component_path "$component_path" $args "$HPAM_BUILDDIR/bench/apps/$prog" "$@"
}

vader="--mca btl vader,self --mca osc pt2pt"
hpam="--mca btl hpam,self --mca osc rdma"

# app_matrix PROGRAM [ARGS...]: the whole matrix, then one run with --break 1
# that must fail (the program's check can fail).
app_matrix() {
  local prog=$1 np nic
  shift
  for np in 2 4; do
    app_run ok "$prog np=$np vader" "$np" "$vader" "$prog" "$@"
    for nic in medusa hamlyn; do
      app_run ok "$prog np=$np hpam nic=$nic" "$np" "$hpam --mca btl_hpam_nic $nic" "$prog" "$@"
      app_run ok "$prog np=$np hpam nic=$nic with faults" "$np" "$hpam --mca btl_hpam_nic $nic $faults" "$prog" "$@"
    done
  done
  app_run fail "$prog --break 1 is caught by its own check" 2 "$hpam" "$prog" "$@" --break 1
}
