#!/usr/bin/env bash
# configure without UCX's source: the UCX transport is optional. In scratch
# directories under the build tree (no ucx-src/ there), configure must
#   * succeed without the source and without --with-ucx*, leave the transport
#     and its tests out of the Makefile, keep the BTL, libhpam and
#     libhpam_splitc in it, and end with a summary saying why and how to get
#     the transport;
#   * succeed with --without-ucx, saying so;
#   * fail with --with-ucx-src=DIR of a directory without the source, and with
#     --with-ucx alone, naming the reason;
#   * build it again with --with-ucx-src naming the source this build uses
#     (when it has one).
# Configure runs share a cache file; nothing is compiled.
set -u
: "${HPAM_BUILDDIR:?run through make check}" "${HPAM_SRCDIR:?run through make check}"
work=$HPAM_BUILDDIR/tests/install/configure-without-ucx
if [ -f "$HPAM_SRCDIR/config.status" ]; then
  echo "SKIP: the source tree is configured in place (configure refuses to configure it again elsewhere)"
  exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rm -rf "$work" && mkdir -p "$work"
cache=$work/config.cache

# run_configure NAME [ARGS...]: configure in $work/NAME; output in $out, exit status in $rc.
run_configure() {
  local name=$1
  shift
  mkdir -p "$work/$name"
  out=$(cd "$work/$name" && timeout -k 5 300 "$HPAM_SRCDIR/configure" --cache-file="$cache" \
    --with-ompi-component-dir="$work/$name/components" "$@" 2>&1)
  rc=$?
}
# summary_says NAME REGEX: the summary's line matching REGEX must be there
summary_says() {
  grep -qE "$2" <<<"$out" || fail "$1: the summary has no line matching '$2': $(tail -n 14 <<<"$out")"
}
# targets NAME: the libraries, components, check programs and tests the
# Makefile there would build and run
targets() {
  printf 'targets:\n\t@echo $(lib_LTLIBRARIES) $(ompicomponent_LTLIBRARIES) $(uctmodule_LTLIBRARIES) $(noinst_LTLIBRARIES) $(check_PROGRAMS) $(TESTS)\n' |
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$work/$1" -f Makefile -f - targets | tr ' ' '\n'
}

run_configure default
if [ $rc -ne 0 ]; then
  fail "configure without UCX's source failed (exit $rc): $(tail -n 20 <<<"$out")"
else
  summary_says default '^  UCX transport \(libuct_hpam\.so\): no: the source of the installed UCX [0-9.]+ is not at '
  summary_says default 'to build it: .*apt-get source ucx.*--with-ucx-src=DIR'
  summary_says default '^  Open MPI BTL \(mca_btl_hpam\.so\): yes'
  summary_says default '^  libhpam\.so \(native C API\): +yes'
  summary_says default '^  fuzz harnesses: +(yes|no)'
  summary_says default '^  sanitizers: +(yes|no)'
  t=$(targets default)
  ! grep -q 'uct_hpam\|tests/uct/' <<<"$t" || fail "default: the Makefile still builds or tests the UCX transport"
  for want in btl/mca_btl_hpam.la src/capi/libhpam.la src/splitc/libhpam_splitc.la tests/install/staging.sh; do
    grep -q "$want" <<<"$t" || fail "default: the Makefile lost $want"
  done
  [ $failures -eq 0 ] && echo "PASS: configure without UCX's source: everything else is built; $(grep '^  UCX transport' <<<"$out")"
fi

run_configure without --without-ucx
if [ $rc -eq 0 ] && grep -qE '^  UCX transport \(libuct_hpam\.so\): no: disabled by --without-ucx' <<<"$out"; then
  echo "PASS: configure --without-ucx"
else
  fail "configure --without-ucx (exit $rc): $(tail -n 14 <<<"$out")"
fi

run_configure missing --with-ucx-src="$work/no-such-ucx"
if [ $rc -ne 0 ] && grep -q "error: the UCX transport was asked for" <<<"$out" &&
   grep -q "is not at $work/no-such-ucx" <<<"$out"; then
  echo "PASS: configure --with-ucx-src=DIR without the source there fails: $(grep -m1 'is not at' <<<"$out" | sed 's/^ *//')"
else
  fail "configure --with-ucx-src=<empty dir> (exit $rc) did not fail naming the directory: $(tail -n 6 <<<"$out")"
fi

run_configure required --with-ucx
if [ $rc -ne 0 ] && grep -q "error: the UCX transport was asked for" <<<"$out"; then
  echo "PASS: configure --with-ucx without the source fails"
else
  fail "configure --with-ucx (exit $rc) did not fail: $(tail -n 6 <<<"$out")"
fi

ucx_src=$(sed -n 's/^UCX_SRC = //p' "$HPAM_BUILDDIR/Makefile")
if [ -n "$ucx_src" ]; then
  run_configure with --with-ucx-src="$ucx_src"
  if [ $rc -eq 0 ] && grep -qE '^  UCX transport \(libuct_hpam\.so\): yes' <<<"$out" &&
     targets with | grep -q 'uct_hpam'; then
    echo "PASS: configure --with-ucx-src=$ucx_src builds the transport"
  else
    fail "configure --with-ucx-src=$ucx_src (exit $rc): $(tail -n 14 <<<"$out")"
  fi
fi
[ "$failures" -eq 0 ] && rm -rf "$work"
exit $((failures > 0))
