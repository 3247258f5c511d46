# Shared by the test scripts of tests/splitc and tests/gam: run a command
# under a hard time limit and judge it by its exit status and its output.
# Counts failures in $failures; the output stays in $out.
failures=${failures:-0}

# expect_run WANT NAME PATTERN CMD...: WANT is ok (exit 0) or fail (exit not
# 0); either way a line of the output must match the grep PATTERN.
expect_run() {
  local want=$1 name=$2 pattern=$3 start=$SECONDS rc
  shift 3
  out=$(timeout -k 5 "${HPAM_RUN_TIMEOUT:-300}" "$@" 2>&1)
  rc=$?
  if { [ "$want" = ok ] && [ $rc -eq 0 ]; } || { [ "$want" = fail ] && [ $rc -ne 0 ] && [ $rc -ne 124 ]; }; then
    if grep -q -- "$pattern" <<<"$out"; then
      echo "PASS: $name ($((SECONDS - start)) s)"
      return 0
    fi
  fi
  echo "FAIL: $name (exit $rc)"
  echo "$out" | tail -n 30
  failures=$((failures + 1))
  return 1
}
