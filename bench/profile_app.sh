#!/usr/bin/env bash
# Where one Split-C application's time goes on one transport: rank 0 under
# `perf record -e cpu-clock` (a software clock: works where the hardware
# counters are not exposed, as in this VM), grouped by layer and by the
# hottest functions, then a second run under `strace -c` counting rank 0's
# system calls. Two processes, like bench/run's applications step.
#
#   bench/profile_app.sh [--build DIR] TRANSPORT APP [APP ARGS...]
#   bench/profile_app.sh hpam-medusa radix_sort --n 65536
#
# TRANSPORT: vader, vader-pt2pt, tcp, hpam-medusa, hpam-hamlyn (one-sided
# component as in bench/apps.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/_build
if [ "${1:-}" = --build ]; then build=$2; shift 2; fi
[ $# -ge 2 ] || { echo "usage: bench/profile_app.sh [--build DIR] TRANSPORT APP [ARGS...]" >&2; exit 2; }
t=$1 app=$2
shift 2
command -v perf > /dev/null && command -v strace > /dev/null ||
  { echo "bench/profile_app.sh: needs perf (linux-perf) and strace" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cpath="$build/btl/component:$(ls -d /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3)"
declare -A btl=([vader]="--mca btl vader,self" [vader-pt2pt]="--mca btl vader,self" [tcp]="--mca btl tcp,self"
                [hpam-medusa]="--mca btl hpam,self --mca btl_hpam_nic medusa"
                [hpam-hamlyn]="--mca btl hpam,self --mca btl_hpam_nic hamlyn")
progress() { :; }
. "$top/bench/apps.sh"  # app_osc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# rank 0 runs under the tool, rank 1 bare
cat > "$tmp/wrap" <<EOF
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then exec \$TOOL "\$@"; fi
exec "\$@"
EOF
chmod +x "$tmp/wrap"
run() {  # run TOOL ARGS...: the application under TOOL on rank 0
  local tool=$1
  shift
  # shellcheck disable=SC2046,SC2086
  TOOL=$tool timeout 900 mpirun -np 2 --mca pml ob1 --mca mca_base_component_path "$cpath" -x TOOL \
    ${btl[$t]} $(app_osc "$t" "$app") "$tmp/wrap" "$build/bench/apps/$app" "$@"
}
echo "== $app $* over $t: phases (perf running on rank 0)"
run "perf record -q -e cpu-clock -F 2000 -o $tmp/perf.data --" "$@" | grep -E "^phase|: (ok|FAILED)"
echo "== rank 0's samples by layer"
perf report -i "$tmp/perf.data" --no-children --sort dso --stdio -g none 2> /dev/null | awk '
  /^ *[0-9.]+%/ {
    p = $1; sub("%", "", p); d = $2
    if (d ~ /kernel/) g = "kernel (system calls, page faults)"
    else if (d ~ /mca_btl_hpam/) g = "hpam (btl/hpam and the emulated cards)"
    else if (d ~ /mca_osc_/) g = "Open MPI one-sided (mca_osc_*)"
    else if (d ~ /libmpi|libopen-pal|mca_pml|mca_btl|mca_coll|libpmix|libevent/) g = "Open MPI other (pml, btl, coll, progress)"
    else if (d ~ /libc\.so|ld-linux/) g = "libc"
    else if (d ~ /splitc/) g = "libhpam_splitc"
    else if (d == "'"$app"'") g = "application"
    else g = "other"
    s[g] += p }
  END { for (g in s) printf "%6.1f%%  %s\n", s[g], g }' | sort -rn
echo "== rank 0's hottest functions"
perf report -i "$tmp/perf.data" --no-children --sort dso,sym --stdio -g none 2> /dev/null |
  awk '/^ *[0-9.]+%/ && ++n <= 15'
echo "== rank 0's system calls (strace -c, a second run: its times are strace's, its counts exact)"
run "strace -f -c -o $tmp/strace.txt" "$@" > /dev/null
head -n 12 "$tmp/strace.txt"
