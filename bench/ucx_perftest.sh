#!/usr/bin/env bash
# UCX's own benchmark over the hpam transport beside UCX's shared-memory
# transports, in one run: ucx_perftest between two processes (server and
# client on this node) for active messages, put, get and atomics, over
# hpam (Medusa and Hamlyn cards), posix, sysv (UCX's mm FIFOs) and cma
# (cross-memory attach: put/get zero-copy only). A cell a transport cannot
# do is left empty (n/a in the table).
#
#   bench/ucx_perftest.sh [--quick] [--runs N] [--build DIR] > ucx_perftest.csv
#
# CSV: test,layout,bytes,transport,run,p50_latency_us,bandwidth_MBps,Mmsgs_per_s
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/_build quick= runs=3
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 runs=1 ;;
    --runs) runs=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "usage: bench/ucx_perftest.sh [--quick] [--runs N] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
lib=$build/uct/.libs/libuct_hpam.so
[ -f "$lib" ] || { echo "ucx_perftest.sh: $lib missing: build first" >&2; exit 1; }
command -v ucx_perftest > /dev/null || { echo "ucx_perftest.sh: apt-get install ucx-utils" >&2; exit 1; }

# transport -> "tl device environment"
declare -A tl=([posix]="posix memory" [sysv]="sysv memory" [cma]="cma memory"
               [hpam-medusa]="hpam medusa UCX_HPAM_NIC=medusa"
               [hpam-hamlyn]="hpam hamlyn UCX_HPAM_NIC=hamlyn")
order="posix sysv cma hpam-medusa hpam-hamlyn"
# test:layout:bytes[:user[:outstanding]]: latency of one operation,
# bandwidth/rate of a stream. "user": ucx_perftest's buffers are plain user
# memory the domain registers (UCX_HPAM_ALLOC=heap: the interface's allocation
# methods without the domain's own, so hpam's puts and gets take the
# registered-memory path, process_vm_writev/readv); posix and sysv register
# nothing, so UCX allocates their buffers by their domain whatever the knob
# says, as in the other rows. outstanding: ucx_perftest -O (its get test
# keeps one get in flight by default, a latency loop; -O 32 makes a stream).
cases="am_lat:short:8 am_bw:short:8 am_bw:bcopy:4096 put_lat:short:8 put_lat:zcopy:8
put_bw:short:8 put_bw:zcopy:65536 get:bcopy:8 get:zcopy:8 get:zcopy:65536
add_lat:short:8 add_mr:short:8 fadd:short:8 swap:short:8 cswap:short:8
put_bw:short:8:user get:bcopy:8:user get:bcopy:8:user:32"
# --quick: one case of each kind (a server and client pair costs about a second)
[ -z "$quick" ] || cases="am_lat:short:8 am_bw:bcopy:4096 put_lat:zcopy:8 get:zcopy:65536 add_lat:short:8 cswap:short:8"
iters() {  # iterations for a case: fewer for large messages and in quick mode
  # (200,000 small operations take 4-150 ms: with 20,000, a stream of puts
  # lasted half a millisecond and its figure moved by 2x between runs)
  local n=200000
  [ "$3" -ge 65536 ] && n=4000
  if [ -n "$quick" ]; then n=5000 && [ "$3" -lt 65536 ] || n=1000; fi
  echo "$n"
}
port=$((13500 + RANDOM % 400))
export UCX_HPAM_JOB=bench$$  # a job of its own, whatever else runs UCX on the node
# one_case TRANSPORT TEST LAYOUT BYTES [user [OUTSTANDING]]: prints the client's CSV result line
one_case() {
  local t=$1 test=$2 layout=$3 bytes=$4 memory=${5:-} outstanding=${6:-}
  read -r name dev env <<< "${tl[$t]}"
  local n args
  n=$(iters "$test" "$layout" "$bytes")
  args=(-t "$test" -x "$name" -d "$dev" -D "$layout" -s "$bytes" -n "$n" -w $((n / 10))
        ${outstanding:+-O "$outstanding"})
  port=$((port + 1))
  local -a e=(env LD_PRELOAD="$lib" UCX_WARN_UNUSED_ENV_VARS=n ${env:+$env}
              ${memory:+UCX_HPAM_ALLOC=heap})
  "${e[@]}" timeout 120 ucx_perftest "${args[@]}" -p "$port" > /dev/null 2>&1 &
  local server=$! line= attempt
  # The server may not listen yet (a loaded machine): retry while it lives;
  # a case the transport cannot do ends the server at once.
  for attempt in 1 2 3 4 5 6; do
    sleep 0.3
    kill -0 "$server" 2> /dev/null || break
    line=$("${e[@]}" timeout 120 ucx_perftest localhost "${args[@]}" -p "$port" -v 2> /dev/null |
           awk -F, '/^[0-9]/ {print $2 "," $6 "," $8 / 1e6}') || true
    [ -n "$line" ] && break
  done
  kill "$server" 2> /dev/null || true
  wait "$server" 2> /dev/null || true
  echo "$line"
}
echo "test,layout,bytes,transport,run,p50_latency_us,bandwidth_MBps,Mmsgs_per_s"
for r in $(seq "$runs"); do
  for c in $cases; do
    IFS=: read -r test layout bytes memory outstanding <<< "$c"
    # the CSV's layout names the variant: bcopy+user+O32
    label=$layout${memory:++$memory}${outstanding:++O$outstanding}
    for t in $order; do
      # cma moves data only by zero-copy put and get
      if [ "$t" = cma ] && [ "$layout" != zcopy ]; then continue; fi
      res=$(one_case "$t" "$test" "$layout" "$bytes" "$memory" "$outstanding")
      [ -n "$res" ] && echo "$test,$label,$bytes,$t,$r,$res"
    done
  done
done
