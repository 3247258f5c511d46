# HPAM_CHECK_GTEST: GoogleTest from Debian's libgtest-dev (prebuilt static libraries).
AC_DEFUN([HPAM_CHECK_GTEST], [
  AC_LANG_PUSH([C++])
  hpam_save_LIBS=$LIBS
  hpam_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS -std=c++17"
  LIBS="-lgtest -pthread $LIBS"
  AC_MSG_CHECKING([for GoogleTest])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]],
                                  [[testing::InitGoogleTest(); return 0;]])],
    [AC_MSG_RESULT([yes]); have_gtest=yes],
    [AC_MSG_RESULT([no]); have_gtest=no])
  LIBS=$hpam_save_LIBS
  CXXFLAGS=$hpam_save_CXXFLAGS
  AC_LANG_POP([C++])
  AS_IF([test "x$have_gtest" != xyes],
        [AC_MSG_ERROR([GoogleTest not found: apt-get install libgtest-dev])])
  AC_SUBST([GTEST_LIBS], ["-lgtest -pthread"])
])
