# HPAM_ENABLE_SANITIZERS: --enable-sanitizers builds everything with
# AddressSanitizer and UndefinedBehaviorSanitizer.
AC_DEFUN([HPAM_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with ASan and UBSan])],
    [], [enable_sanitizers=no])
  HPAM_SAN_FLAGS=
  AS_IF([test "x$enable_sanitizers" = xyes],
        [HPAM_SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"])
  AC_SUBST([HPAM_SAN_FLAGS])
  AM_CONDITIONAL([HPAM_SANITIZERS], [test "x$enable_sanitizers" = xyes])
])
