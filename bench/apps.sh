# Sourced by bench/run: the Split-C applications (bench/apps) over every
# transport, and the GAM basic benchmarks and torture tests (tests/gam).
# Uses bench/run's $build, $out, $quick, $runs, $cpath, ${btl[...]} and
# progress; writes $out/apps.csv (two processes), apps4.csv (four, on two
# cores: --oversubscribe, unbound), apps4p.csv (four, pinned two per core),
# apps_stats.csv, apps_config.csv, gam.csv.

# The size of each application: seconds over vader by default, a blink in --quick.
declare -A app_args=(
  [radix_sort]="--n 65536" [sample_sort]="--n 2097152" [em3d]="--n 3000 --degree 10 --remote 20 --iters 8"
  [matmul]="--n 1280 --block 64" [components]="--n 8192 --edges 8192")
declare -A app_args_quick=(
  [radix_sort]="--n 32768" [sample_sort]="--n 262144" [em3d]="--n 2000 --iters 4"
  [matmul]="--n 256 --block 32" [components]="--n 2048 --edges 2048")
app_list="radix_sort sample_sort em3d matmul components"
app_transports="vader vader-pt2pt tcp hpam-medusa hpam-hamlyn"

# app_osc TRANSPORT APP: the one-sided component (see README, Split-C section).
app_osc() {
  case $1 in
    vader-pt2pt | tcp) echo "--mca osc pt2pt" ;;
    vader) if [ "$2" = components ]; then echo "--mca osc pt2pt"; else echo "--mca osc rdma"; fi ;;
    *) echo "--mca osc rdma" ;;
  esac
}

# app_run TRANSPORT RUN APP [NP [pinned]]: one run of NP processes (default
# 2); its phases appended to apps.csv (apps4.csv at 4 processes, apps4p.csv
# pinned), its counters (2 processes only) to apps_stats.csv; a wrong answer
# stops the benchmark. More processes than cores are unbound (where the
# scheduler puts them: a run's time follows that placement, h31a in
# docs/decisions.md) or, pinned, rank i on core i mod 2, the same placement
# for every transport (as bench/run's pinned collectives).
app_run() {
  local t=$1 r=$2 app=$3 np=${4:-2} args log csv=apps.csv bind=''
  if [ -n "$quick" ]; then args=${app_args_quick[$app]}; else args=${app_args[$app]}; fi
  [ "$np" = 2 ] || csv=apps$np.csv
  if [ "${5:-}" = pinned ]; then bind="--map-by core --bind-to core:overload-allowed" csv=apps${np}p.csv; fi
  log=$(mktemp)
  # shellcheck disable=SC2046,SC2086
  if ! timeout 900 mpirun -np "$np" --oversubscribe $bind --mca pml ob1 --mca mca_base_component_path "$cpath" ${btl[$t]} \
      $(app_osc "$t" "$app") "$build/bench/apps/$app" $args > "$log" 2>&1 ||
      ! grep -q "^$app: ok" "$log"; then
    echo "bench/run: $app over $t at $np processes${5:+ ($5)} failed:" >&2
    tail -n 20 "$log" >&2
    rm -f "$log"
    return 1
  fi
  awk -F, -v t="$t" -v r="$r" '
    /^phase,/ { print $2 "," t "," r "," $3 "," $4; if ($3 !~ /\./) total += $4 }
    END { print "'"$app"'," t "," r ",total," total }' "$log" >> "$out/$csv"
  [ "$np" != 2 ] ||
    awk -F, -v t="$t" -v r="$r" '/^stat,/ { print $2 "," t "," r "," $3 "," $4 }' "$log" >> "$out/apps_stats.csv"
  rm -f "$log"
}

# apps_of TRANSPORT RUN: the applications of that run. tcp's blocking
# remote reads cost about a millisecond each (the target answers only when
# it calls MPI), so em3d and components take a minute there, 8-13x vader:
# one run of those. The others, where tcp can be the best transport, are
# medians of as many runs as every other transport's.
apps_of() {
  if [ "$1" = tcp ] && [ "$2" -gt 1 ]; then echo "$tcp_repeat_apps"; else echo "$app_list"; fi
}
tcp_repeat_apps="radix_sort sample_sort matmul"

apps_step() {
  btl[vader-pt2pt]="--mca btl vader,self"
  progress "Split-C applications over $app_transports, $runs run(s) each"
  echo "app,transport,run,phase,seconds" > "$out/apps.csv"
  echo "app,transport,run,phase,seconds" > "$out/apps4.csv"
  echo "app,transport,run,phase,seconds" > "$out/apps4p.csv"
  echo "app,transport,run,counter,value" > "$out/apps_stats.csv"
  {
    echo "app,arguments"
    for app in $app_list; do
      if [ -n "$quick" ]; then echo "$app,${app_args_quick[$app]}"; else echo "$app,${app_args[$app]}"; fi
    done
  } > "$out/apps_config.csv"
  for r in $(seq "$runs"); do
    for t in $app_transports; do
      progress "  run $r: $t"
      for app in $(apps_of "$t" "$r"); do app_run "$t" "$r" "$app"; done
    done
  done
  # Four processes on the cores there are, as many runs as two, unbound
  # (their time is mostly the scheduler's: one run moved by up to 3x) and
  # pinned two per core (the same placement for every transport); tcp as at
  # two (apps_of), and not in --quick, where its blocking reads would take
  # most of the step.
  for r in $(seq "$runs"); do
    for t in $app_transports; do
      if [ "$t" = tcp ] && [ -n "$quick" ]; then continue; fi
      progress "  4 processes, run $r: $t"
      for app in $(apps_of "$t" "$r"); do app_run "$t" "$r" "$app" 4; done
      progress "  4 processes pinned two per core, run $r: $t"
      for app in $(apps_of "$t" "$r"); do app_run "$t" "$r" "$app" 4 pinned; done
    done
  done
}

gam_step() {
  local iters=200000 bulk=10000 thru=100000 k=64
  if [ -n "$quick" ]; then iters=20000 bulk=1000 thru=10000 k=16; fi
  progress "GAM basic benchmarks and torture tests (native, tests/gam)"
  : > "$out/gam.csv"
  for nic in medusa hamlyn; do
    for r in $(seq "$runs"); do
      "$build/tests/gam/ping_pong" --nic "$nic" --iters "$iters" | grep '^ping_pong,' >> "$out/gam.csv"
      "$build/tests/gam/ping_bulk" --nic "$nic" --iters "$bulk" --sizes 64,256,1024,4096,8000 |
        grep '^ping_bulk,' >> "$out/gam.csv"
      "$build/tests/gam/thru_bulk" --nic "$nic" --iters "$thru" --sizes 64,256,1024,4096,8000 |
        grep '^thru_bulk,' >> "$out/gam.csv"
    done
    for t in test_xfer test_med; do
      "$build/tests/gam/$t" --nic "$nic" --procs 4 --per-pair "$k" | grep "^$t,.*,procs," >> "$out/gam.csv"
    done
  done
}
