# HPAM_CHECK_FUZZ: a clang with libFuzzer, AddressSanitizer and UBSan
# (Debian: clang-14 and libclang-rt-14-dev) for the fuzz harnesses of
# tests/fuzz. Without one the harnesses are skipped, with a message at
# configure time, in `make fuzz` and in `make check`.
AC_DEFUN([HPAM_CHECK_FUZZ], [
  AC_ARG_VAR([FUZZ_CXX], [C++ compiler with libFuzzer for the fuzz harnesses (default: clang++-14, clang++)])
  AS_IF([test -z "$FUZZ_CXX"], [AC_CHECK_PROGS([FUZZ_CXX], [clang++-14 clang++])])
  hpam_fuzz=no
  AS_IF([test -n "$FUZZ_CXX"], [
    AC_MSG_CHECKING([whether $FUZZ_CXX builds libFuzzer harnesses with ASan and UBSan])
    cat > conftest-fuzz.cc <<'_HPAM_EOF'
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { return n && *d == 7 ? 0 : 0; }
_HPAM_EOF
    AS_IF([$FUZZ_CXX -std=c++17 -fsanitize=fuzzer,address,undefined conftest-fuzz.cc -o conftest-fuzz >&AS_MESSAGE_LOG_FD 2>&1],
          [hpam_fuzz=yes])
    rm -f conftest-fuzz conftest-fuzz.cc
    AC_MSG_RESULT([$hpam_fuzz])
  ])
  AS_IF([test "x$hpam_fuzz" != xyes],
        [AC_MSG_WARN([no clang with libFuzzer (Debian: clang-14 libclang-rt-14-dev): the fuzz harnesses of tests/fuzz will be skipped])])
  AM_CONDITIONAL([HPAM_FUZZ], [test "x$hpam_fuzz" = xyes])
])
