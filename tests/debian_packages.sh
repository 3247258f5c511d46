#!/usr/bin/env bash
# hpam's Debian packages, built and tried as an administrator would:
#
#   1. `make dist`, unpack the tarball, `dpkg-buildpackage -us -uc -b` there
#      (debian/; the UCX transport against the UCX source this build uses);
#   2. lintian on the result: its tags are listed, an error fails;
#   3. in a Debian chroot without the build tree (debootstrap --variant=minbase
#      of this release, kept under the build directory as a cache), `apt-get
#      install ./*.deb`; `ompi_info` must list `btl: hpam` with no flags, an
#      MPI job (the README's Split-C example) must run over
#      `--mca btl hpam,self`, the README's native example between two
#      processes, `ucx_info -d` must list the UCX transport; then `apt-get
#      purge` must leave no file of theirs behind.
#
# Nothing is installed on this machine itself: an mca_btl_hpam.so in Open
# MPI's component directory would be picked up by every other job here (the
# test suites run from build trees), so the packages only ever go into the
# chroot, whose mounts (proc, sys, /dev/shm) live in a private mount namespace
# and vanish with it. Needs root (debootstrap, chroot) and the network (the
# chroot's packages).
#
#   bash tests/debian_packages.sh [--fresh-chroot]
#   HPAM_BUILD_DIR=DIR (default _build, configured by tests/setup.sh)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${HPAM_BUILD_DIR:-$top/_build}
jobs=${HPAM_JOBS:-$(nproc)}
work=$build/debian-packages
chroot_dir=$work/chroot
say() { printf '== %s\n' "$*"; }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
[ "${1:-}" = --fresh-chroot ] && rm -rf "$chroot_dir"
[ -f "$build/Makefile" ] || die "no configured build in $build: run bash tests/setup.sh check first"

tools=(debhelper lintian debootstrap fakeroot dpkg-dev)
missing=()
for p in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 1. Packages from the release tarball (dpkg-buildpackage writes them beside
#    the source directory, so it is unpacked under the build directory).
say "make dist"
make -s -C "$build" dist >/dev/null
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
ucx_src=$(sed -n 's/^UCX_SRC = //p' "$build/Makefile")
[ -n "$ucx_src" ] || die "this build has no UCX transport (configure --with-ucx-src=DIR), so the packages could not hold it"
rm -rf "$work/src" && mkdir -p "$work/src"
tar -C "$work/src" -xzf "$build/hpam-$version.tar.gz"
say "dpkg-buildpackage -us -uc -b (HPAM_UCX_SRC=$ucx_src)"
(cd "$work/src/hpam-$version" &&
  HPAM_UCX_SRC=$ucx_src DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
    dpkg-buildpackage -us -uc -b >"$work/dpkg-buildpackage.log" 2>&1) ||
  { tail -n 40 "$work/dpkg-buildpackage.log"; die "dpkg-buildpackage failed (log: $work/dpkg-buildpackage.log)"; }
debs=()
for d in "$work"/src/*.deb; do [[ $d == *-dbgsym_* ]] || debs+=("$d"); done
[ ${#debs[@]} -eq 6 ] || die "expected 6 packages (and their -dbgsym), got: ${debs[*]}"
for d in "${debs[@]}"; do echo "   $(basename "$d"): $(dpkg-deb -c "$d" | awk '$1 !~ /^d/ {print $6}' | tr '\n' ' ')"; done

# 2. lintian.
say "lintian"
lintian -I -E --pedantic --tag-display-limit 0 "$work"/src/hpam_"${version}"_*.changes 2>&1 |
  grep -v '^running with root privileges' >"$work/lintian.txt" || true
sed 's/^/   /' "$work/lintian.txt"
! grep -q '^E: ' "$work/lintian.txt" || die "lintian errors (above)"

# 3. Install, use and remove them in a chroot.
if [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  say "debootstrap --variant=minbase $codename ${mirror:=http://deb.debian.org/debian} (once; kept in $chroot_dir)"
  rm -rf "$chroot_dir.tmp"
  debootstrap --variant=minbase "$codename" "$chroot_dir.tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log"; die "debootstrap failed"; }
  mv "$chroot_dir.tmp" "$chroot_dir"
fi
inside=$chroot_dir/tmp/hpam-debs
rm -rf "$inside" && mkdir -p "$inside"
cp "${debs[@]}" "$inside/"
bash "$top/tests/install/readme_examples.sh" "$top/README.md" "$inside"
cp "$top/tests/install/in_chroot.sh" "$inside/"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
say "in the chroot: apt-get install ./*.deb, ompi_info, an MPI job over hpam, the native example, ucx_info, apt-get purge"
unshare --mount --propagation private -- bash -c '
  set -e
  c=$1
  mount -t proc proc "$c/proc"
  mount -t sysfs -o ro sysfs "$c/sys"
  mount -t tmpfs -o size=1g,mode=1777 tmpfs "$c/dev/shm"
  exec chroot "$c" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    timeout -k 10 1200 bash /tmp/hpam-debs/in_chroot.sh
' _ "$chroot_dir"
rm -rf "$inside"
say "packages built, installed, used and removed: ${debs[*]##*/}"
