# AX_HPAM_CXX17: make sure the C++ compiler accepts -std=c++17.
AC_DEFUN([AX_HPAM_CXX17], [
  AC_MSG_CHECKING([whether $CXX accepts -std=c++17])
  hpam_save_CXXFLAGS=$CXXFLAGS
  CXXFLAGS="$CXXFLAGS -std=c++17"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>]],
                    [[std::optional<int> x{1}; if constexpr (true) return *x;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++17 compiler is required])])
  CXXFLAGS=$hpam_save_CXXFLAGS
  AC_SUBST([HPAM_CXXSTD], [-std=c++17])
])
