#!/usr/bin/env bash
# UCX's own tools over the hpam transport, loaded with LD_PRELOAD: ucx_info
# lists the transport with its capabilities and the UCX_HPAM_* variables,
# refuses a bad value naming it, and ucx_perftest runs an active-message
# ping-pong and a put/get/atomic test between two processes on both cards.
. "$(dirname "$0")/../mpi/common.sh"  # HPAM_BUILDDIR, sanitizer_preload
# An instrumented library (sanitizer build) in an uninstrumented tool needs
# the sanitizer runtimes loaded first.
lib=${sanitizer_preload:+$sanitizer_preload:}$HPAM_BUILDDIR/uct/.libs/libuct_hpam.so
# A job of our own: other runs of this script (other checkouts) may be using
# the default job "node" with another card at the same time.
export UCX_HPAM_JOB=tools$$
failures=0
check() {  # check NAME COMMAND...: the command must succeed
  local name=$1
  shift
  if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; failures=$((failures + 1)); fi
}
info() { LD_PRELOAD=$lib UCX_WARN_UNUSED_ENV_VARS=n timeout 60 ucx_info "$@" 2>&1; }

out=$(info -d)
check "ucx_info -d lists transport hpam on the medusa card" \
  grep -qzE "Transport: hpam.{0,80}Device: medusa" <<< "$out"
check "ucx_info -d shows hpam's capabilities" \
  grep -qzE "Transport: hpam.*am_short: <= [0-9]+.*atomic_cswap: 32, 64 bit.*error handling: peer failure" <<< "$out"
check "UCX_HPAM_NIC=hamlyn: the device is the hamlyn card" \
  grep -qzE "Transport: hpam.{0,80}Device: hamlyn" <<< "$(UCX_HPAM_NIC=hamlyn info -d)"
out=$(info -c -f)
for v in NIC DEPTH BLOCK_SIZE GIVE_UP_MS TIMEOUT_US FAULT_DROP KEY_CHECK CRC_CHECK JOB MAX_PROCS; do
  check "ucx_info -c -f lists UCX_HPAM_$v" grep -q "^UCX_HPAM_$v=" <<< "$out"
done
check "a bad value is refused naming the variable" \
  grep -q "invalid UCX_HPAM_DEPTH = 0: valid range is \[1, 64\]" <<< "$(UCX_HPAM_DEPTH=0 info -d)"

# perftest NIC TEST LAYOUT: server and client on this node over hpam. The
# client retries while the server lives and has not yet opened its port (a
# busy machine can take seconds to start it); on failure both sides' output
# is shown.
logs=$(mktemp -d)
trap 'rm -rf "$logs" "$OMPI_MCA_orte_tmpdir_base"' EXIT
perftest() {
  local nic=$1 test=$2 layout=$3 port=$((14000 + RANDOM % 1000)) line= deadline=$((SECONDS + 40))
  local -a e=(env LD_PRELOAD="$lib" UCX_HPAM_NIC="$nic" UCX_WARN_UNUSED_ENV_VARS=n)
  local -a a=(-t "$test" -x hpam -d "$nic" -D "$layout" -n 2000 -w 100 -p "$port")
  "${e[@]}" timeout 60 ucx_perftest "${a[@]}" > "$logs/server" 2>&1 &
  local server=$!
  : > "$logs/client"
  while [ -z "$line" ] && [ $SECONDS -lt $deadline ] && kill -0 "$server" 2> /dev/null; do
    sleep 0.3
    "${e[@]}" timeout 60 ucx_perftest localhost "${a[@]}" -v > "$logs/out" 2>> "$logs/client"
    line=$(grep -E "^2000," "$logs/out") || cat "$logs/out" >> "$logs/client"
  done
  kill "$server" 2> /dev/null
  wait "$server" 2> /dev/null
  if [ -z "$line" ]; then
    echo "-- $nic $test: server output (last 20 lines)"; tail -n 20 "$logs/server"
    echo "-- $nic $test: client output (last 30 lines)"; tail -n 30 "$logs/client"
    return 1
  fi
}
for nic in medusa hamlyn; do
  check "ucx_perftest am_lat over hpam/$nic" perftest "$nic" am_lat short
  check "ucx_perftest get (zcopy) over hpam/$nic" perftest "$nic" get zcopy
  check "ucx_perftest cswap over hpam/$nic" perftest "$nic" cswap short
done
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
