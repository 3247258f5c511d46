#!/usr/bin/env bash
# The release tarball:
#
#   1. `make distcheck` in the build directory: the tarball is unpacked
#      read-only, configured and built out of tree (the UCX transport too,
#      against this build's UCX source), the whole suite runs (make check),
#      it is installed under its own prefix and uninstalled, and distclean
#      leaves nothing;
#   2. every file git tracks is in the tarball (but .ci/ and .gitignore):
#      a file a fragment forgot to list fails here, not in a user's build;
#   3. the tarball configured --without-ucx builds everything else (make),
#      and the layering check and the staging-prefix install test pass there.
#
#   bash tests/distcheck.sh            (after bash tests/setup.sh check)
#   HPAM_BUILD_DIR=DIR (default _build), HPAM_JOBS (default: CPUs)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${HPAM_BUILD_DIR:-$top/_build}
jobs=${HPAM_JOBS:-$(nproc)}
say() { printf '== %s\n' "$*"; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
[ -f "$build/Makefile" ] || die "no configured build in $build: run bash tests/setup.sh check first"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
tarball=$build/hpam-$version.tar.gz

say "make distcheck (the whole suite runs in it: minutes)"
start=$SECONDS
make -C "$build" -j"$jobs" distcheck >"$build/distcheck.log" 2>&1 ||
  { tail -n 60 "$build/distcheck.log"; die "make distcheck (log: $build/distcheck.log)"; }
grep -A2 'archives ready for distribution' "$build/distcheck.log" | sed 's/^/   /'
echo "   ($((SECONDS - start)) s; $(grep -E '^# (PASS|FAIL|SKIP|ERROR):' "$build/distcheck.log" | tr -s ' ' | tr '\n' ' '))"

if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
  say "the tarball against git ls-files"
  missing=$(comm -23 <(git -C "$top" ls-files | grep -v '^\.ci/\|^\.gitignore$' | sort) \
                     <(tar -tzf "$tarball" | sed "s|^hpam-$version/||" | sort))
  [ -z "$missing" ] || die "tracked by git but not in $tarball (list them in a local.mk):
$missing"
  echo "   every tracked file is in it"
fi

say "the tarball configured --without-ucx: make, make check of layering and staging"
scratch=$build/distcheck-without-ucx
rm -rf "$scratch" && mkdir -p "$scratch/build"
tar -C "$scratch" -xzf "$tarball"
(cd "$scratch/build" && "../hpam-$version/configure" -q --without-ucx \
   --with-ompi-component-dir="$scratch/components" >configure.out 2>&1 &&
 grep -q 'UCX transport (libuct_hpam.so): no: disabled by --without-ucx' configure.out &&
 make -s -j"$jobs" >make.log 2>&1 &&
 for t in tests/layering.sh tests/install/staging.sh; do
   HPAM_BUILDDIR=$PWD HPAM_SRCDIR=$scratch/hpam-$version MPIRUN=mpirun bash "../hpam-$version/$t" >>check.log 2>&1 ||
     { echo "FAIL: $t" >>check.log; exit 1; }
 done) ||
  { tail -n 40 "$scratch"/build/*.log "$scratch/build/configure.out" 2>/dev/null; die "the build without UCX (in $scratch)"; }
[ ! -e "$scratch/build/uct/libuct_hpam.la" ] || die "--without-ucx built the UCX transport"
grep -E '^(PASS|FAIL)' "$scratch/build/check.log" | sed 's/^/   /'
rm -rf "$scratch"
say "distcheck passed: $tarball"
