#!/usr/bin/env bash
# UCX's own UCT test suite (test/gtest/uct of UCX 1.13.1, Debian's source
# package that tests/setup.sh fetches) over the hpam transport, on both cards,
# without and with the wire's faults; prints a pass/fail/skip table per test
# group. See README, "UCX over hpam", for what it runs and its results.
#
#   bash tests/uct/ucx_gtest.sh [build|run|all]      (default all)
#   make -C _build ucx-gtest                          (the same, from the build)
#
# build: compiles the suite once into $UCX_GTEST_DIR (default
#   <build>/ucx-gtest; later runs reuse it): the UCT tests and the common test
#   support only, against the installed UCX libraries, from a copy of the
#   sources in which the transport lists name hpam (UCT_TEST_TLS in
#   uct/uct_test.h, the component list of uct/test_md.cc).
# run: the tests instantiated for hpam (gtest filter hpam/*), with
#   libuct_hpam.so preloaded, in four configurations: UCX_HPAM_NIC=medusa and
#   hamlyn, each without faults and with 1 % drop / duplicate / corrupt and
#   2 % reorder (UCX_HPAM_FAULT_*). Logs in $UCX_GTEST_DIR/logs.
# Environment: HPAM_BUILDDIR or HPAM_BUILD_DIR (default ./_build), UCX_GTEST_DIR, UCX_SRC (the
#   unpacked UCX source; default <build>/ucx-src/ucx-<installed version>),
#   UCX_GTEST_FILTER (extra gtest filter within hpam/*, default *),
#   UCX_GTEST_CONFIGS (subset of "medusa hamlyn medusa+faults hamlyn+faults"),
#   UCX_GTEST_TIMEOUT (seconds per test group, default 120).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${HPAM_BUILDDIR:-${HPAM_BUILD_DIR:-$top/_build}}" && pwd) || exit 1
out=${UCX_GTEST_DIR:-$build/ucx-gtest}
version=$(ucx_info -v | sed -n 's/^# Version //p')
src=${UCX_SRC:-$build/ucx-src/ucx-$version}
lib=$build/uct/.libs/libuct_hpam.so
mode=${1:-all}

say() { echo "== ucx_gtest: $*"; }

# The sources, copied once into the build directory and patched there: hpam
# joins the transports UCT_INSTANTIATE_TEST_CASE and
# UCT_INSTANTIATE_NO_SELF_TEST_CASE instantiate, and the memory-domain tests'
# components.
prepare() {
  local g=$out/src/test/gtest
  [ -f "$out/src/.prepared" ] && return 0
  [ -f "$src/test/gtest/uct/uct_test.h" ] ||
    { echo "no UCX source at $src (run bash tests/setup.sh, or set UCX_SRC)"; return 1; }
  rm -rf "$out/src"
  mkdir -p "$g"
  cp -pr "$src/test/gtest/common" "$src/test/gtest/uct" "$g/"
  sed -i 's/^\(    knem\)$/\1, hpam/' "$g/uct/uct_test.h"
  sed -i 's/^\(                   rdmacm\) \\$/\1, hpam \\/' "$g/uct/test_md.cc"
  grep -q 'knem, hpam' "$g/uct/uct_test.h" && grep -q 'rdmacm, hpam' "$g/uct/test_md.cc" ||
    { echo "could not add hpam to the test lists of $src"; return 1; }
  ucx_info -b > "$out/config.h.tmp" && grep -q '^#define ENABLE_MT' "$out/config.h.tmp" ||
    { echo "ucx_info -b did not print UCX's build configuration"; return 1; }
  mv "$out/config.h.tmp" "$out/config.h"
  touch "$out/src/.prepared"
}

build_suite() {
  mkdir -p "$out"
  prepare || return 1
  local start=$SECONDS
  say "building UCX's UCT gtest in $out (nice -n 10 make -j${UCX_GTEST_JOBS:-2})"
  nice -n 10 make -s -j"${UCX_GTEST_JOBS:-2}" -f "$top/tests/uct/ucx_gtest.mk" \
    UCX_SRC="$src" OUT="$out" "$out/gtest" || return 1
  say "built in $((SECONDS - start)) s"
}

# The wire's faults at the rates of the suite's MPI runs (tests/uct/mpi_ucx.sh).
faults="UCX_HPAM_FAULT_DROP=0.01 UCX_HPAM_FAULT_DUPLICATE=0.01 UCX_HPAM_FAULT_CORRUPT=0.01
UCX_HPAM_FAULT_REORDER=0.02 UCX_HPAM_TIMEOUT_US=200"

# Groups not run under faults, by their nature: test_many2one_am flushes each
# sender while progressing only that sender; a reply the wire lost is sent
# again only when the receiver polls (HPAM's replies come from the
# receiver's handlers), so the flush waits for good.
fault_exclude=${UCX_GTEST_FAULT_EXCLUDE-test_many2one_am}

# run_config NAME: every test group instantiated for hpam in its own process
# (a crash or a hang costs only its group), log in $logs/NAME/GROUP.log.
run_config() {
  local name=$1 nic=${1%+faults} group rc files
  local -a env=(env LD_PRELOAD="$lib" UCX_HPAM_NIC="$nic" UCX_HPAM_JOB="gtest$$${name/+/-}"
                UCX_WARN_UNUSED_ENV_VARS=n UCX_HANDLE_ERRORS=bt UCX_HPAM_GIVE_UP_MS=${UCX_GTEST_GIVE_UP_MS:-200})
  [ "$name" = "$nic" ] || env+=($faults)
  mkdir -p "$logs/$name"
  for group in $groups; do
    if [ "$name" != "$nic" ] && [[ " $fault_exclude " == *" $group "* ]]; then
      echo "[ NOT RUN  ] under faults (UCX_GTEST_FAULT_EXCLUDE)" > "$logs/$name/$group.log"
      continue
    fi
    # test_uct_peer_failure_multiple opens one receiver per 16 open files
    # (up to 256): at 224 files its 14 receivers and one sender (two process
    # indices each) fit a job of UCX_HPAM_MAX_PROCS=32.
    files=$(ulimit -n)
    [ "$group" = test_uct_peer_failure_multiple ] && files=224
    ( ulimit -n "$files" && exec "${env[@]}" timeout -k 5 "${UCX_GTEST_TIMEOUT:-120}" "$out/gtest" \
      --gtest_filter="hpam/$group.${UCX_GTEST_FILTER:-*}" ) > "$logs/$name/$group.log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "[ TIMEOUT  ] after ${UCX_GTEST_TIMEOUT:-120} s" >> "$logs/$name/$group.log"
    echo "[ EXIT     ] $rc" >> "$logs/$name/$group.log"
  done
}

# tally LOG: "pass fail skip" of one group's log. A test that started and
# never finished (crash, timeout) is a failure; so is a nonzero exit with
# no failed test (an error after the tests, e.g. at exit).
tally() {
  awk '/^\[ RUN      \]/ { running = 1; skip = 0; next }
       /^\[ +SKIP \]/ { skip = 1; next }
       /^\[       OK \]/ { if (skip) s++; else p++; running = 0; next }
       /^\[  FAILED  \] hpam\// { if (running) f++; running = 0; next }
       /^\[ EXIT     \]/ { rc = $4 }
       /^\[ NOT RUN  \]/ { print "n/a"; notrun = 1; exit }
       END { if (notrun) exit; if (running) f++; else if (rc != 0 && f == 0) f++; print p + 0, f + 0, s + 0 }' "$1"
}

table() {
  local cfg group line
  printf "%-36s" "group (pass/fail/skip)"
  for cfg in $configs; do printf " %-15s" "$cfg"; done
  echo
  for group in $groups; do
    printf "%-36s" "$group"
    for cfg in $configs; do
      line=$(tally "$logs/$cfg/$group.log")
      printf " %-15s" "${line// //}"
    done
    echo
  done
  printf "%-36s" "total"
  for cfg in $configs; do
    line=$(for group in $groups; do tally "$logs/$cfg/$group.log"; done |
             awk '$1 != "n/a" { p += $1; f += $2; s += $3 } END { print p + 0 "/" f + 0 "/" s + 0 }')
    printf " %-15s" "$line"
  done
  echo
}

run_suite() {
  [ -x "$out/gtest" ] || { echo "no $out/gtest: run $0 build first"; return 1; }
  [ -f "$lib" ] || { echo "no $lib: build hpam first (make -C $build)"; return 1; }
  logs=$out/logs
  configs=${UCX_GTEST_CONFIGS:-medusa hamlyn medusa+faults hamlyn+faults}
  groups=$(LD_PRELOAD="$lib" UCX_HPAM_JOB="gtest$$-list" "$out/gtest" --gtest_list_tests \
             --gtest_filter='hpam/*' | sed -n 's|^hpam/\([A-Za-z0-9_]*\)\.$|\1|p')
  [ -n "$groups" ] || { echo "no test is instantiated for hpam (is $lib loaded?)"; return 1; }
  rm -rf "$logs"
  local cfg start
  for cfg in $configs; do
    start=$SECONDS
    say "UCX_HPAM_NIC=${cfg%+faults}${cfg#${cfg%+faults}}: $(wc -w <<< "$groups") test groups"
    run_config "$cfg"
    say "$cfg: $((SECONDS - start)) s"
  done
  table | tee "$logs/table.txt"
  # Every skipped test with UCX's reason, and every failure (all configurations).
  awk '/^\[ RUN      \]/ { t = $4; sub(/^hpam\//, "", t); sub(/\/[0-9]+$/, "", t) }
       /^\[ +SKIP \]/ { r = $0; sub(/^\[ +SKIP \] */, "", r); print t "  " (r == "" ? "(no buffer size the memory domain can allocate: cap.max_alloc)" : r) }' \
    "$logs"/*/*.log | sort -u > "$logs/skipped.txt"
  grep -E '^\[  FAILED  \] hpam/.* \([0-9]+ ms\)$|^\[ TIMEOUT|^\[ EXIT     \] ([2-9]|1[0-9])' \
    "$logs"/*/*.log | sed -e "s|^$logs/||" -e 's|/\([^/]*\)\.log:| \1 |' \
    -e 's/, where GetParam() = [^ ]*//' > "$logs/failed.txt"
  say "$(wc -l < "$logs/skipped.txt") tests skipped (reasons in $logs/skipped.txt)"
  if [ -s "$logs/failed.txt" ]; then
    say "failures (logs in $logs/<configuration>/<group>.log):"
    cat "$logs/failed.txt"
    return 1
  fi
}

case $mode in
  build) build_suite ;;
  run) run_suite ;;
  all) build_suite && run_suite ;;
  *) echo "usage: $0 [build|run|all]"; exit 2 ;;
esac
