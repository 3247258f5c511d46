# HPAM_CHECK_HWLOC: hwloc places each card's memory on its process's NUMA node.
AC_DEFUN([HPAM_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc development files not found: apt-get install libhwloc-dev])])
])
