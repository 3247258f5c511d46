#!/usr/bin/env bash
# Formatting, checked with clang-format 14 (`--dry-run --Werror`):
#
#   * the C++ sources (src/, tests/, bench/: *.cpp *.hpp *.cc) against the
#     root .clang-format (Google style, 2-space indent, 100 columns);
#   * the C front ends (btl/, uct/: *.c *.h) against btl/.clang-format and
#     uct/.clang-format (Open MPI's and UCX's style: 4-space indent, a
#     function's brace on its own line), which must be the same file.
#
# Files named in tests/format_pending (one path or directory/ a line, each
# with its reason) are reported with the number of lines that differ, and do
# not fail the check: drift recorded there waits for the files' owners
# (reformatting files others are changing only makes their merges conflict).
# Any other file that differs fails, with clang-format's own message. A
# pending file found clean, or an entry naming nothing, is named, so that
# its line can go.
#
#   tests/format.sh [TOP]      (make check runs it; skipped without clang-format 14)
# HPAM_CLANG_FORMAT=PATH picks the binary (default: clang-format-14, or a
# clang-format of version 14).
set -u
top=${1:-${HPAM_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}}

cf=${HPAM_CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then cf=$c; break; fi
  done
fi
if [ -z "$cf" ]; then
  echo "SKIP: clang-format 14 not found (Debian: apt-get install clang-format-14): formatting not checked"
  exit 77
fi

pending_file=$top/tests/format_pending
pending=()
if [ -f "$pending_file" ]; then
  while read -r entry _; do
    case $entry in ''|'#'*) continue ;; esac
    pending+=("$entry")
  done < "$pending_file"
fi
is_pending() {  # is_pending RELPATH
  local p
  for p in "${pending[@]}"; do
    case $p in */) [[ $1 == "$p"* ]] && return 0 ;; *) [ "$1" = "$p" ] && return 0 ;; esac
  done
  return 1
}

failed=0 checked=0 drift_pending=0
check_files() {  # check_files DIR... -- NAME-PATTERN...: every matching file under the DIRs
  local dirs=() names=() f rel n
  while [ "$1" != -- ]; do dirs+=("$top/$1"); shift; done
  shift
  for n in "$@"; do names+=(-o -name "$n"); done
  while IFS= read -r f; do
    rel=${f#"$top"/}
    checked=$((checked + 1))
    if out=$("$cf" --dry-run --Werror "$f" 2>&1); then
      is_pending "$rel" && [[ " ${pending[*]} " == *" $rel "* ]] &&
        echo "clean now: $rel (remove it from tests/format_pending)"
      continue
    fi
    n=$(grep -c 'code should be clang-formatted' <<<"$out")
    if is_pending "$rel"; then
      echo "pending: $rel ($n places differ)"
      drift_pending=$((drift_pending + 1))
    else
      echo "FAIL: $rel is not formatted ($n places; clang-format -i $rel):"
      head -n 20 <<<"$out"
      failed=$((failed + 1))
    fi
  done < <(find "${dirs[@]}" -type f \( "${names[@]:1}" \) | sort)
}

[ -f "$top/.clang-format" ] || { echo "FAIL: no .clang-format at the top"; exit 1; }
for d in btl uct; do
  [ -f "$top/$d/.clang-format" ] || { echo "FAIL: no $d/.clang-format"; exit 1; }
done
cmp -s "$top/btl/.clang-format" "$top/uct/.clang-format" ||
  { echo "FAIL: btl/.clang-format and uct/.clang-format differ (one style for the C front ends)"; exit 1; }
for p in "${pending[@]}"; do
  [ -e "$top/$p" ] || echo "stale: tests/format_pending names $p, which does not exist (remove the line)"
done

check_files src tests bench -- '*.cpp' '*.hpp' '*.cc'
check_files btl uct -- '*.c' '*.h'

echo "$checked files checked: $failed not formatted, $drift_pending pending (tests/format_pending)"
[ "$failed" -eq 0 ]
