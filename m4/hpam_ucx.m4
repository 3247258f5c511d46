# HPAM_CHECK_UCX: UCX is optional; detected now for the later UCX transport.
AC_DEFUN([HPAM_CHECK_UCX], [
  PKG_CHECK_MODULES([UCX], [ucx], [have_ucx=yes], [have_ucx=no])
  AM_CONDITIONAL([HPAM_HAVE_UCX], [test "x$have_ucx" = xyes])
])
