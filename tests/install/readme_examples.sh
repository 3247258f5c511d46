#!/usr/bin/env bash
# readme_examples.sh README DIR: writes the README's native active-message
# example (the first C block of "## The native active-message API") to
# DIR/native.c and its Split-C example (of "## Split-C style programs") to
# DIR/splitc.c, so that the tests compile exactly what the README shows.
set -eu
readme=$1 dir=$2
block() { # HEADING-PREFIX: the first ```c block after that heading
  awk -v h="$1" 'index($0, h) == 1 {s = 1; next} s && /^```c$/ {p = 1; next} p && /^```$/ {exit} p' "$readme"
}
block "## The native active-message API" >"$dir/native.c"
block "## Split-C style programs" >"$dir/splitc.c"
[ -s "$dir/native.c" ] && [ -s "$dir/splitc.c" ] || { echo "no examples found in $readme" >&2; exit 1; }
