#!/usr/bin/env bash
# Run by tests/debian_packages.sh inside a Debian chroot, in /tmp/hpam-debs
# with the packages (*.deb) and the README's examples (native.c, splitc.c):
# install them with apt, use them, purge them, and check nothing is left.
set -euo pipefail
cd /tmp/hpam-debs
export DEBIAN_FRONTEND=noninteractive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
packages=(libhpam0 libhpam-splitc0 libhpam-hamlyn0 libhpam-dev openmpi-btl-hpam ucx-hpam)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc libc6-dev pkgconf ucx-utils ./*.deb >apt.log 2>&1 ||
  { tail -n 30 apt.log; echo "FAIL: apt-get install ./*.deb"; exit 1; }
pass "apt-get install ./*.deb: $(dpkg-query -W -f='${Package} ${Version}, ' "${packages[@]}")"

line=$(ompi_info | grep "btl: hpam" || true)
[ -n "$line" ] && pass "ompi_info lists, with no flags: ${line#"${line%%[! ]*}"}" || fail "ompi_info does not list btl: hpam"

cc -o native native.c $(pkg-config --cflags --libs hpam) && cc -o splitc splitc.c $(pkg-config --cflags --libs hpam-splitc) ||
  fail "compiling the README's examples with pkg-config"
if [ -x splitc ]; then
  out=$(timeout -k 5 120 mpirun -np 2 --oversubscribe --mca pml ob1 --mca btl hpam,self --mca osc rdma ./splitc 2>&1) &&
    grep -qx "sum 398 (expected 398)" <<<"$out" && pass "MPI job over --mca btl hpam,self (README's Split-C example, 2 ranks): $out" ||
    fail "MPI job over --mca btl hpam,self: $out"
fi
if [ -x native ]; then
  timeout -k 5 60 ./native 1 chroot-job >native1.out 2>&1 &
  peer=$!
  out=$(timeout -k 5 60 ./native 0 chroot-job 2>&1) && wait "$peer" && grep -qx "process 1 holds 4201" <<<"$out" &&
    pass "README's native example between two processes: $out" || fail "native example: $out $(cat native1.out)"
fi
lib=$(dpkg -L ucx-hpam | grep 'libuct_hpam\.so$')
LD_PRELOAD=$lib ucx_info -d 2>&1 | grep -q "Transport: hpam" && pass "ucx_info -d lists Transport: hpam (LD_PRELOAD=$lib)" ||
  fail "ucx_info -d does not list the hpam transport"

files=$(dpkg -L "${packages[@]}" | while read -r f; do [ -d "$f" ] || echo "$f"; done)
apt-get purge -y -qq "${packages[@]}" >>apt.log 2>&1 || fail "apt-get purge"
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done; dpkg -l "${packages[@]}" 2>/dev/null | grep '^[a-z][a-z] ' | grep -v '^un ' || true)
[ -z "$left" ] && pass "apt-get purge removed every file ($(wc -w <<<"$files") files)" || fail "left after purge: $left"
ompi_info | grep -q "btl: hpam" && fail "ompi_info still lists btl: hpam after purge" || true
exit $((failures > 0))
