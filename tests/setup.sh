#!/usr/bin/env bash
# hpam: install dependencies, build, install, run the demo, run the suite.
#
#   bash tests/setup.sh demo    # deps + build + install + a real demo over hpam
#   bash tests/setup.sh check   # deps + build + the whole test suite
#
# Options (environment): HPAM_BUILD_DIR (default _build), HPAM_CONFIGURE_FLAGS
# (e.g. --enable-sanitizers), HPAM_JOBS (default: number of CPUs).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${HPAM_BUILD_DIR:-$top/_build}
jobs=${HPAM_JOBS:-$(nproc)}
packages=(libopenmpi-dev openmpi-bin libhwloc-dev libucx-dev ucx-utils dpkg-dev libgtest-dev
          autoconf automake libtool pkg-config make g++ gnuplot-nox valgrind
          clang-14 libclang-rt-14-dev)

say() { printf '== %s\n' "$*"; }

install_deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The UCX transport (uct/) is compiled against UCX's internal headers, which
# libucx-dev does not ship: fetch Debian's source package of exactly the
# installed version into the build directory (a build input, never committed).
# Adds a deb-src entry for this Debian release when apt has none.
fetch_ucx_source() {
  local version upstream dest
  version=$(dpkg-query -W -f='${source:Version}' libucx0)
  upstream=${version%%-*}
  dest="$build/ucx-src"
  ucx_src=$dest/ucx-$upstream
  [ -f "$ucx_src/src/uct/base/uct_iface.h" ] && return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  if ! apt-cache showsrc ucx 2>/dev/null | grep -q "^Version: $version\$"; then
    local codename
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    say "adding a deb-src entry for Debian $codename (apt-get source ucx)"
    printf '%s\n' "# added by hpam's tests/setup.sh: Debian source packages (apt-get source ucx)" \
      "Types: deb-src" "URIs: http://deb.debian.org/debian" \
      "Suites: $codename $codename-updates" "Components: main" \
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
      "${sudo[@]}" tee /etc/apt/sources.list.d/hpam-deb-src.sources >/dev/null
    "${sudo[@]}" apt-get update -qq
  fi
  say "apt-get source ucx=$version into $dest"
  rm -rf "$dest" && mkdir -p "$dest"
  (cd "$dest" && apt-get source -qq "ucx=$version" >/dev/null 2>&1) ||
    { echo "apt-get source ucx=$version failed: the UCX transport cannot be built" >&2; return 1; }
}

build_tree() {
  cd "$top"
  if [ ! -x configure ] || [ configure.ac -nt configure ] || [ -n "$(find . m4 -maxdepth 3 -name 'local.mk' -newer configure 2>/dev/null | head -1)" ] || [ Makefile.am -nt configure ]; then
    say "autoreconf"
    autoreconf -fi >/dev/null
  fi
  mkdir -p "$build"
  fetch_ucx_source
  cd "$build"
  if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
    # --with-ucx-src makes the UCX transport required: these commands build
    # everything (unless HPAM_CONFIGURE_FLAGS says otherwise about UCX).
    local ucx_flag=--with-ucx-src=$ucx_src
    case " ${HPAM_CONFIGURE_FLAGS:-} " in *" --with"*"-ucx"*) ucx_flag= ;; esac
    say "configure $ucx_flag ${HPAM_CONFIGURE_FLAGS:-}"
    # shellcheck disable=SC2086
    "$top/configure" -q $ucx_flag ${HPAM_CONFIGURE_FLAGS:-}
  fi
  say "make -j$jobs"
  make -s -j"$jobs"
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

demo() {
  install_deps
  build_tree
  say "make install (mca_btl_hpam.so goes where Open MPI finds it)"
  make -s install >/dev/null
  if command -v ompi_info >/dev/null && ompi_info | grep -q "btl: hpam"; then
    say "ompi_info lists: $(ompi_info | grep 'btl: hpam' | sed 's/^ *//')"
  fi
  say "native active messages: 4-word round trip and bulk bandwidth between two processes"
  "$build/bench/am_bench" --quick
  if [ -x "$build/bench/mpi_pingpong" ] && ompi_info | grep -q "btl: hpam"; then
    say "an MPI program over hpam: mpirun --mca pml ob1 --mca btl hpam,self -np 2 bench/mpi_pingpong"
    timeout 300 mpirun --mca pml ob1 --mca btl hpam,self -np 2 "$build/bench/mpi_pingpong" --quick
  fi
}

# The closing line sums the GoogleTest cases and the script tests of all logs.
summarize() {
  local passed=0 failed=0 n
  set +o pipefail
  for log in $(find "$build/tests" -name '*.log'); do
    if grep -q '^\[==========\]' "$log"; then
      n=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | awk '{s+=$4} END {print s+0}' || true)
      passed=$((passed + n))
      n=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$log" | awk '{s+=$4} END {print s+0}' || true)
      failed=$((failed + n))
      # a gtest binary that crashed or timed out reports no totals
      grep -qE '^\[  (PASSED|FAILED)  \] [0-9]+ test' "$log" || failed=$((failed + 1))
    else
      local trs=${log%.log}.trs
      if [ -f "$trs" ] && grep -q ':test-result: PASS' "$trs"; then passed=$((passed + 1));
      elif [ -f "$trs" ] && grep -q ':test-result: SKIP' "$trs"; then :;
      else failed=$((failed + 1)); fi
    fi
  done
  echo "$passed passed, $failed failed"
}

check() {
  install_deps
  build_tree
  say "make check"
  # Logs of an earlier run must not be counted as this run's results.
  find "$build/tests" \( -name '*.log' -o -name '*.trs' \) -delete 2>/dev/null || true
  local rc=0
  make -j"$jobs" check || rc=$?
  if [ $rc -ne 0 ]; then
    for log in $(grep -l -E ':test-result: (FAIL|ERROR)' $(find "$build/tests" -name '*.trs') 2>/dev/null | sed 's/\.trs$/.log/'); do
      say "failed: $log (last 60 lines)"
      tail -n 60 "$log"
    done
  fi
  summarize
  # A build failure leaves tests without a log: never report it as a pass.
  if [ $rc -ne 0 ] && ! grep -qlE ':test-result: (FAIL|ERROR)' $(find "$build/tests" -name '*.trs') /dev/null; then
    say "make check failed before the tests ran (see the build errors above)"
  fi
  return $rc
}

case "${1:-}" in
  demo) demo ;;
  check) check ;;
  *) echo "usage: bash tests/setup.sh demo|check" >&2; exit 2 ;;
esac
