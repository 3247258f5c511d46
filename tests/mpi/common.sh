# Shared by the MPI test scripts: run a program over btl/hpam from the build
# tree (not the installed copy), with a hard time limit.
set -u
: "${HPAM_BUILDDIR:?run through make check}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=${MPIRUN:-mpirun}
component_path="$HPAM_BUILDDIR/btl/component:${HPAM_OMPI_SYSTEM_COMPONENT_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}"
failures=0
# This script's jobs keep their Open MPI session directories apart from
# other scripts' (make -j2 check runs two at once): Open MPI 4.1.4 makes
# /tmp/ompi.HOST.UID by a look, then a mkdir, and a job starting in the
# same instant as another's failed orte_init ("mkdir ... File exists").
# (A script that sets its own EXIT trap removes the directory there too.)
OMPI_MCA_orte_tmpdir_base=$(mktemp -d "${TMPDIR:-/tmp}/hpam_ompi.XXXXXX")
export OMPI_MCA_orte_tmpdir_base
trap 'rm -rf "$OMPI_MCA_orte_tmpdir_base"' EXIT
# Sanitizer builds: Open MPI's own leaks at exit are not ours to report, and
# tools that are not instrumented (ompi_info) need the runtimes preloaded.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
sanitizer_preload=
if nm -D --undefined-only "$HPAM_BUILDDIR/btl/component/mca_btl_hpam.so" 2>/dev/null | grep -q __asan_; then
  sanitizer_preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
fi

# hpam_mpirun NP NIC PROGRAM [extra mpirun args...]: runs the program over
# btl/hpam from the build tree, within HPAM_MPI_TIMEOUT seconds (default 120).
hpam_mpirun() {
  local np=$1 nic=$2 prog=$3
  shift 3
  timeout -k 5 "${HPAM_MPI_TIMEOUT:-120}" "$MPIRUN" -np "$np" --oversubscribe \
    --mca pml ob1 --mca btl hpam,self --mca mca_base_component_path "$component_path" \
    --mca btl_hpam_nic "$nic" "$@" "$HPAM_BUILDDIR/tests/mpi/$prog" ${HPAM_PROG_ARGS:-}
}

# hpam_ucx_mpirun NP NIC PROGRAM [extra mpirun args...]: the same over Open
# MPI's pml ucx and osc ucx with UCX restricted to the hpam transport
# (UCX_TLS=hpam,self: every message between ranks goes through hpam). Open
# MPI 4.1's pml ucx selects itself only on networks it knows unless
# pml_ucx_tls/devices say "any". btl self only: no other BTL.
hpam_ucx_mpirun() {
  local np=$1 nic=$2 prog=$3 lib="$HPAM_BUILDDIR/uct/.libs/libuct_hpam.so"
  shift 3
  timeout -k 5 "${HPAM_MPI_TIMEOUT:-120}" "$MPIRUN" -np "$np" --oversubscribe \
    --mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
    --mca btl self -x LD_PRELOAD="${sanitizer_preload:+$sanitizer_preload:}$lib" \
    -x UCX_TLS=hpam,self -x UCX_HPAM_NIC="$nic" -x UCX_WARN_UNUSED_ENV_VARS=n "$@" \
    "$HPAM_BUILDDIR/tests/mpi/$prog" ${HPAM_PROG_ARGS:-}
}
ucx_faults="-x UCX_HPAM_FAULT_DROP=0.01 -x UCX_HPAM_FAULT_DUPLICATE=0.01 \
-x UCX_HPAM_FAULT_CORRUPT=0.01 -x UCX_HPAM_FAULT_REORDER=0.02 -x UCX_HPAM_TIMEOUT_US=200"

# hpam_run NP NIC PROGRAM [extra mpirun args...]: stdout+stderr in $out
hpam_run() { out=$(hpam_mpirun "$@" 2>&1); }

# expect_ok NAME NP NIC PROGRAM [args]: the program must print "ok" and exit 0
expect_ok() {
  local name=$1
  shift
  local start=$SECONDS
  if hpam_run "$@" && grep -q ": ok" <<<"$out"; then
    echo "PASS: $name ($((SECONDS - start)) s)"
  else
    echo "FAIL: $name"
    echo "$out" | tail -n 30
    failures=$((failures + 1))
  fi
}

faults="--mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.02 --mca btl_hpam_timeout_us 200"

# Every fault kind at once, delay included (dtypes.sh, dtypes_faults.sh).
dtypes_all_faults="--mca btl_hpam_fault_drop 0.01 --mca btl_hpam_fault_duplicate 0.01 \
--mca btl_hpam_fault_corrupt 0.01 --mca btl_hpam_fault_reorder 0.02 --mca btl_hpam_fault_delay 0.01 \
--mca btl_hpam_timeout_us 200"

# matrix PROGRAM: at 2, 3 and 4 ranks on both NIC models, then at 2 and 4
# ranks with faults injected.
matrix() {
  local prog=$1 nic np
  for nic in medusa hamlyn; do
    for np in 2 3 4; do
      expect_ok "$prog np=$np nic=$nic" "$np" "$nic" "$prog"
    done
    for np in 2 4; do
      # shellcheck disable=SC2086
      expect_ok "$prog np=$np nic=$nic with faults" "$np" "$nic" "$prog" $faults
    done
  done
}

# start_burner [SECONDS]: one process spinning beside the tests (a busy CI
# machine) for at most SECONDS (default 300); stop_burner ends it, and is
# the EXIT trap once started.
burner_pid=
start_burner() {
  timeout "${1:-300}" bash -c 'while :; do :; done' &
  burner_pid=$!
  trap stop_burner EXIT
}
stop_burner() {
  [ -n "$burner_pid" ] && kill "$burner_pid" 2>/dev/null
  [ -n "$burner_pid" ] && wait "$burner_pid" 2>/dev/null
  burner_pid=
  return 0
}

finish() {
  echo "$failures failure(s)"
  [ "$failures" -eq 0 ]
}
