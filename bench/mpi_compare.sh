#!/usr/bin/env bash
# MPI ping-pong latency (0 B, 8 B, 8 KiB, 1 MiB) and 1 MiB bandwidth over
# hpam (both NIC models) beside vader, measured in the same run, with each
# figure's ratio to vader. Medians of repeated runs inside each mpirun, and
# the median of --runs mpiruns per transport (interleaved).
#   bench/mpi_compare.sh [--quick] [--runs N] [BUILD_DIR]
set -euo pipefail
quick= runs=3 build=
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick; runs=1 ;;
    --runs) runs=$2; shift ;;
    *) build=$1 ;;
  esac
  shift
done
top=$(cd "$(dirname "$0")/.." && pwd)
build=${build:-$top/_build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cpath="$build/btl/component:$(ls -d /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3)"
prog="$build/bench/mpi_pingpong"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A label=([vader]="--mca btl vader,self"
                  [hpam-medusa]="--mca btl hpam,self --mca btl_hpam_nic medusa"
                  [hpam-hamlyn]="--mca btl hpam,self --mca btl_hpam_nic hamlyn")
order=(vader hpam-medusa hpam-hamlyn)
for r in $(seq "$runs"); do
  for t in "${order[@]}"; do
    echo "run $r/$runs: $t" >&2
    # shellcheck disable=SC2086
    timeout 600 mpirun -np 2 --mca pml ob1 --mca mca_base_component_path "$cpath" \
      ${label[$t]} "$prog" $quick > "$tmp/$t.$r.csv"
  done
done
# median over runs of each (kind,bytes), then ratios to vader
python3 - "$tmp" "$runs" "${order[@]}" <<'PY'
import csv, statistics, sys, os
tmp, runs, order = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
data = {}
for t in order:
    rows = {}
    for r in range(1, runs + 1):
        for row in csv.DictReader(open(os.path.join(tmp, f"{t}.{r}.csv"))):
            rows.setdefault((row["kind"], int(row["bytes"])), []).append(float(row["value"]))
    data[t] = {k: statistics.median(v) for k, v in rows.items()}
keys = sorted(data["vader"], key=lambda k: (k[0], k[1]))
print(f"{'metric':<16}{'bytes':>9}" + "".join(f"{t:>14}" for t in order) + "".join(f"{t+'/vader':>20}" for t in order[1:]))
for k in keys:
    vals = [data[t].get(k, float('nan')) for t in order]
    ratios = [v / vals[0] if vals[0] else float('nan') for v in vals[1:]]
    print(f"{k[0]:<16}{k[1]:>9}" + "".join(f"{v:>14.3f}" for v in vals) + "".join(f"{x:>20.2f}" for x in ratios))
PY
