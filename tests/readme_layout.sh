#!/usr/bin/env bash
# README's layout block (the ``` block after "The layout follows the
# layers") names every top-level directory of the source tree and every
# directory of src/, and each src/ line it has names a directory that
# exists. Generated directories (build-aux/, autom4te.cache/, and any build
# tree: a directory holding config.status, whatever its name) and hidden
# ones are not asked for. And tests/ mirrors src/: a directory of tests/
# named as a directory of src/ (or of the top, as btl/ and uct/) sits at
# the same path (tests/nic/hamlyn/ for src/nic/hamlyn/, never tests/hamlyn/).
#
#   tests/readme_layout.sh [TOP]      (make check runs it)
set -u
top=${1:-${HPAM_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}}
block=$(awk '/The layout follows/ {seen = 1} seen && /^```/ {n++; next} n == 1' "$top/README.md")
[ -n "$block" ] || { echo "FAIL: no layout block after \"The layout follows\" in README.md"; exit 1; }
names=$(awk '{print $1}' <<<"$block")

failed=0
for d in "$top"/*/; do
  d=$(basename "$d")
  case $d in build-aux|autom4te.cache) continue ;; esac
  [ -f "$top/$d/config.status" ] && continue
  grep -q "^$d/" <<<"$names" || { echo "FAIL: README's layout block omits $d/"; failed=1; }
done
for d in "$top"/src/*/; do
  d=src/$(basename "$d")
  grep -qx "$d/\?" <<<"$names" || { echo "FAIL: README's layout block omits $d"; failed=1; }
done
for d in $(grep '^src/' <<<"$names"); do
  [ -d "$top/$d" ] || { echo "FAIL: README's layout block names $d, which does not exist"; failed=1; }
done
for t in $(cd "$top/tests" && find . -mindepth 1 -type d | sed 's|^\./||'); do
  name=$(basename "$t")
  homes=$(cd "$top" && { find src -type d -name "$name"; [ -d "$name" ] && echo "$name"; })
  [ -z "$homes" ] && continue
  [ -d "$top/src/$t" ] || [ -d "$top/$t" ] ||
    { echo "FAIL: tests/$t/ does not mirror $(echo $homes): move it to tests/${homes#src/}/"; failed=1; }
done
[ $failed -eq 0 ] && echo "PASS: README's layout block names every directory ($(wc -l <<<"$names") lines)"
exit $failed
