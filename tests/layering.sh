#!/usr/bin/env bash
# The include rules of CONVENTIONS.md, enforced. Each directory may include
# only from the layers below it:
#
#   sys -> nic -> {am, deposit, hamlyn_lib} -> capi -> {btl, uct}      splitc: MPI only
#
# src/include holds the public headers (hpam_*.h, and hpam_hamlyn.hpp, the
# C++ header that hamlyn_lib implements); only capi implements the C ones,
# and btl/ and uct/ see the core through them alone, and through the front
# ends' shared services, src/capi/hpam_frontend.h (layer "frontend": a C
# header like the public ones, which includes only them and C headers).
# Nothing below btl/ and uct/ includes Open MPI or UCX headers.
#
#   tests/layering.sh [TOP]   check the tree at TOP (default: the source tree)
#   tests/layering.sh --self-test
#                             also show that a planted bad include is caught
set -u
top=${HPAM_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}

# allowed_quoted LAYER: the extended regex a quoted include must match.
allowed_quoted() {
  case $1 in
    sys) echo '^sys/' ;;
    nic) echo '^(sys|nic)/' ;;
    am) echo '^(sys|nic|am)/' ;;
    deposit) echo '^(sys|nic|deposit)/' ;;
    hamlyn_lib) echo '^((sys|nic|hamlyn_lib)/|hpam_hamlyn\.hpp$)' ;;
    capi) echo '^((sys|nic|am|deposit|capi)/|hpam_[a-z]+\.h$)' ;;
    include|frontend) echo '^hpam_[a-z]+\.h$' ;;
    splitc) echo '^(splitc/|hpam_splitc\.h$)' ;;
    btl) echo '^(btl_hpam[a-z_]*\.h|hpam_[a-z]+\.h|opal_config\.h|(opal|ompi)/.*)$' ;;
    uct) echo '^(uct_hpam[a-z_]*\.h|hpam_[a-z]+\.h|(uct|ucs)/.*)$' ;;
    *) return 1 ;;
  esac
}

# forbidden_system LAYER: system includes (<...>) the layer must not use.
forbidden_system() {
  case $1 in
    btl) echo '^(uct|ucs)/' ;;
    uct) echo '^(mpi\.h|opal/|ompi/)' ;;
    splitc) echo '^(opal/|ompi/|uct/|ucs/)' ;;
    frontend) echo '^(mpi\.h|opal/|ompi/|uct/|ucs/|[^.]*$|.*\.hpp$)' ;;  # C only: no <cstdint>
    *) echo '^(mpi\.h|opal/|ompi/|uct/|ucs/)' ;;
  esac
}

layer_of() {
  case $1 in
    src/include/*) echo include ;;
    src/capi/hpam_*.h) echo frontend ;;
    src/*/*) local d=${1#src/}; echo "${d%%/*}" ;;
    btl/*) echo btl ;;
    uct/*) echo uct ;;
    *) echo "" ;;
  esac
}

# check TOP: prints every violation; returns non-zero if any.
check() {
  local root=$1 bad=0 f rel layer quoted system line inc
  while IFS= read -r f; do
    rel=${f#"$root"/}
    layer=$(layer_of "$rel")
    [ -n "$layer" ] || continue
    if ! quoted=$(allowed_quoted "$layer"); then
      echo "layering: $rel: no include rule for layer '$layer' (add it to tests/layering.sh)"
      bad=1
      continue
    fi
    system=$(forbidden_system "$layer")
    while IFS= read -r line; do
      inc=${line#*:}
      case $inc in
        *'"'*)
          inc=${inc#*\"}
          inc=${inc%%\"*}
          if ! grep -Eq "$quoted" <<<"$inc"; then
            echo "layering: $rel:${line%%:*}: $layer may not include \"$inc\""
            bad=1
          fi
          ;;
        *'<'*)
          inc=${inc#*<}
          inc=${inc%%>*}
          if grep -Eq "$system" <<<"$inc"; then
            echo "layering: $rel:${line%%:*}: $layer may not include <$inc>"
            bad=1
          fi
          ;;
      esac
    done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include' "$f")
  done < <(find "$root/src" "$root/btl" "$root/uct" -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' \) \
             2>/dev/null | sort)
  return $bad
}

# The checker must catch a planted bad include (nic reaching up into am),
# or its silence would prove nothing.
self_test() {
  local tmp rc
  tmp=$(mktemp -d)
  mkdir -p "$tmp/src/nic" "$tmp/src/am" "$tmp/src/capi" "$tmp/btl"
  printf '#include "sys/clock.hpp"\n#include <cstdint>\n' >"$tmp/src/nic/good.hpp"
  printf '#include "hpam_am.h"\n#include "hpam_frontend.h"\n#include "opal/mca/btl/btl.h"\n' >"$tmp/btl/good.c"
  printf '#include <stdint.h>\n#include "hpam_deposit.h"\n' >"$tmp/src/capi/hpam_frontend.h"
  check "$tmp" >/dev/null || { echo "FAIL: self-test: a clean tree was refused"; rm -rf "$tmp"; return 1; }
  printf '#include "am/endpoint.hpp"\n' >"$tmp/src/nic/planted.hpp"
  printf '#include "nic/card.hpp"\n' >"$tmp/btl/planted.c"
  printf '#include <opal/util/output.h>\n' >"$tmp/src/am/planted.hpp"
  printf '#include "c_api.hpp"\n' >"$tmp/btl/planted_capi.c"
  printf '#include <cstdint>\n#include "capi/c_api.hpp"\n' >"$tmp/src/capi/hpam_planted.h"
  local out
  out=$(check "$tmp")
  rc=$?
  rm -rf "$tmp"
  if [ $rc -ne 0 ] && [ "$(grep -c 'may not include' <<<"$out")" -eq 6 ]; then
    echo "PASS: self-test: planted bad includes were caught:"
    sed 's/^/  /' <<<"$out"
  else
    echo "FAIL: self-test: planted bad includes not all caught:"
    echo "$out"
    return 1
  fi
}

failures=0
if [ "${1:-}" = "--self-test" ] || [ -z "${1:-}" ]; then
  self_test || failures=$((failures + 1))
fi
root=$top
[ -n "${1:-}" ] && [ "$1" != "--self-test" ] && root=$1
if check "$root"; then
  echo "PASS: every include of src/, btl/ and uct/ follows the layering"
else
  failures=$((failures + 1))
fi
[ $failures -eq 0 ]
