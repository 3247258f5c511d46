#!/usr/bin/env bash
# Installing like a library, into a staging prefix under the build tree:
# `make install` with prefix=STAGE (and DESTDIR=ROOT as a guard, so nothing
# can reach the live system: every file must land under ROOT/STAGE), then
# the README's native example and its Split-C example are compiled with
# `pkg-config --cflags --libs` alone and run, the native one between two
# processes, the Split-C one under mpirun over the *installed* BTL. The
# installed libraries export only their API (libhpam: hpam_*, SONAME
# libhpam.so.0; libhpam_splitc: splitc_*; libhpam_hamlyn: hpam::hamlyn;
# mca_btl_hpam.so: its component;
# libuct_hpam.so: nothing).
set -u
# The make below is not the make running this test: none of its flags or
# command-line variables (TESTS=..., DESTDIR=...) apply.
unset MAKEFLAGS MFLAGS MAKELEVEL
: "${HPAM_BUILDDIR:?run through make check}" "${HPAM_SRCDIR:?run through make check}"
. "$HPAM_SRCDIR/tests/mpi/common.sh"
work=$HPAM_BUILDDIR/tests/install/staging
root=$work/root
stage=$work/prefix
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rm -rf "$work" && mkdir -p "$work"

# 1. make install into the stage (every directory configure chose absolutely
#    is redirected too). -s: only warnings and errors.
if ! make -s -C "$HPAM_BUILDDIR" install DESTDIR="$root" prefix="$stage" exec_prefix="$stage" \
    ompicomponentdir="$stage/lib/openmpi" uctmoduledir="$stage/lib/ucx" >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  echo "FAIL: make install into $root$stage"
  exit 1
fi
stray=$(find "$root" \( -type f -o -type l \) ! -path "$root$stage/*")
[ -z "$stray" ] || fail "installed outside the prefix: $stray"
ln -sfn "$root$stage" "$stage"
pc=$(find "$stage/" -name hpam.pc)
[ -n "$pc" ] || { echo "FAIL: make install wrote no hpam.pc"; exit 1; }
export PKG_CONFIG_PATH=${pc%/hpam.pc}
libdir=$(pkg-config --variable=libdir hpam)
echo "installed: $(cd "$stage" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')"

# 2. What the libraries export.
lib=$libdir/libhpam.so
soname=$(objdump -p "$lib" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libhpam.so.0 ] || fail "libhpam.so's SONAME is '$soname', not libhpam.so.0"
exports=$(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3}' | sed 's/@.*//')
n=$(grep -c '^hpam_' <<<"$exports")
others=$(grep -v '^hpam_\|^HPAM_0$' <<<"$exports" | tr '\n' ' ')
[ "$n" -ge 40 ] || fail "libhpam.so exports only $n hpam_* functions"
[ -z "$others" ] || fail "libhpam.so exports more than the C API: $others"
for f in hpam_ep_create hpam_request_4 hpam_poll hpam_knob_count hpam_dep_put; do
  grep -qx "$f" <<<"$exports" || fail "libhpam.so does not export $f"
done
exports=$(nm -D --defined-only "$libdir/libhpam_splitc.so" | awk 'NF == 3 {print $3}' | sed 's/@.*//')
others=$(grep -v '^splitc_\|^HPAM_SPLITC_0$' <<<"$exports" | tr '\n' ' ')
[ -z "$others" ] || fail "libhpam_splitc.so exports more than the C API: $others"
exports=$(nm -DC --defined-only "$libdir/libhpam_hamlyn.so" | cut -d' ' -f3- | grep -v 'hpam::hamlyn::\|^HPAM_HAMLYN_0$' | tr '\n' ';')
[ -z "$exports" ] || fail "libhpam_hamlyn.so exports more than hpam::hamlyn: $exports"
[ "$(pkg-config --libs hpam-hamlyn)" = "-L$libdir -lhpam_hamlyn " ] || fail "pkg-config --libs hpam-hamlyn: $(pkg-config --libs hpam-hamlyn)"
btl=$stage/lib/openmpi/mca_btl_hpam.so
exports=$(nm -D --defined-only "$btl" | awk 'NF == 3 {print $3}' | tr '\n' ' ')
[ "$exports" = "mca_btl_hpam_component " ] || fail "mca_btl_hpam.so exports: $exports"
uct=$stage/lib/ucx/libuct_hpam.so
if [ -f "$HPAM_BUILDDIR/uct/libuct_hpam.la" ]; then
  exports=$(nm -D --defined-only "$uct" | awk 'NF == 3 {print $3}' | tr '\n' ' ')
  [ -z "$exports" ] || fail "libuct_hpam.so exports: $exports"
fi
echo "exports: libhpam.so.0 $n hpam_* functions, libhpam_splitc.so.0 splitc_*, libhpam_hamlyn.so.0 hpam::hamlyn; mca_btl_hpam.so its component; libuct_hpam.so nothing"

# 3. The README's examples, compiled with pkg-config alone.
bash "$HPAM_SRCDIR/tests/install/readme_examples.sh" "$HPAM_SRCDIR/README.md" "$work" ||
  fail "extracting the README's examples"
cc=${CC:-cc}
# A sanitizer build's libraries call the sanitizers' runtimes: a program
# linked against them is built as their users would build it, with them.
san_flags=${sanitizer_preload:+-fsanitize=address,undefined}
for ex in native:hpam splitc:hpam-splitc; do
  src=${ex%%:*} pc=${ex#*:}
  flags=$(pkg-config --cflags --libs "$pc") || { fail "pkg-config $pc"; continue; }
  echo "$cc $src.c \$(pkg-config --cflags --libs $pc) = $flags"
  # shellcheck disable=SC2086
  "$cc" -std=c11 -Wall -Werror -Wno-unused-parameter $san_flags -o "$work/$src" "$work/$src.c" $flags ||
    fail "compiling the README's $src example with pkg-config's $pc flags"
done
run_env=(env LD_LIBRARY_PATH="$(pkg-config --variable=libdir hpam)" ${sanitizer_preload:+LD_PRELOAD=$sanitizer_preload})
if [ -x "$work/native" ]; then
  ldd_line=$("${run_env[@]}" ldd "$work/native" | grep 'libhpam\.so')
  grep -q "$libdir/libhpam.so.0" <<<"$ldd_line" || fail "native example loads '$ldd_line', not the staged library"
  job=hpam-staging-$$
  "${run_env[@]}" timeout -k 5 60 "$work/native" 1 "$job" >"$work/native1.out" 2>&1 &
  peer=$!
  out=$("${run_env[@]}" timeout -k 5 60 "$work/native" 0 "$job" 2>&1)
  rc=$?
  wait "$peer"
  rc1=$?
  if [ $rc -eq 0 ] && [ $rc1 -eq 0 ] && grep -qx "process 1 holds 4201" <<<"$out"; then
    echo "PASS: README native example between two processes: $out"
  else
    fail "README native example: exit $rc / $rc1: $out $(cat "$work/native1.out")"
  fi
fi
if [ -x "$work/splitc" ]; then
  out=$(timeout -k 5 120 "$MPIRUN" -np 3 --oversubscribe --mca pml ob1 --mca btl hpam,self --mca osc rdma \
    --mca mca_base_component_path "$stage/lib/openmpi:${HPAM_OMPI_SYSTEM_COMPONENT_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}" \
    -x LD_LIBRARY_PATH="$(pkg-config --variable=libdir hpam-splitc)" ${sanitizer_preload:+-x LD_PRELOAD=$sanitizer_preload} \
    "$work/splitc" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] && grep -qx "sum 897 (expected 897)" <<<"$out"; then
    echo "PASS: README Split-C example, 3 ranks over the installed btl/hpam: $out"
  else
    fail "README Split-C example over the installed btl/hpam: exit $rc: $out"
  fi
fi

# 4. make uninstall leaves nothing but directories behind.
make -s -C "$HPAM_BUILDDIR" uninstall DESTDIR="$root" prefix="$stage" exec_prefix="$stage" \
  ompicomponentdir="$stage/lib/openmpi" uctmoduledir="$stage/lib/ucx" >>"$work/install.log" 2>&1 ||
  fail "make uninstall"
left=$(find "$root" \( -type f -o -type l \))
[ -z "$left" ] || fail "make uninstall left: $left"
[ "$failures" -eq 0 ] && rm -rf "$work"
exit $((failures > 0))
