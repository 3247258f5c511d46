# HPAM_CHECK_UCX: the installed UCX (libucx-dev, ucx-utils) and, for the UCT
# component in uct/, the unpacked source of exactly that UCX version.
#
# UCT's component, memory-domain and interface structures (src/uct/base/) are
# internal to UCX and not in libucx-dev, so the transport is compiled against
# the headers of Debian's own source package of the installed version (a
# build input fetched by `apt-get source ucx`, never committed), with UCX's
# build configuration (config.h) taken from the installed library itself
# (`ucx_info -b`), so that the internal structures have the installed layout.
AC_DEFUN([HPAM_CHECK_UCX], [
  PKG_CHECK_MODULES([UCX], [ucx], [],
    [AC_MSG_ERROR([UCX not found by pkg-config: apt-get install libucx-dev])])
  ucx_version=`$PKG_CONFIG --modversion ucx`
  ucx_includedir=`$PKG_CONFIG --variable=includedir ucx`
  AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
  AS_IF([test "x$UCX_INFO" = xno],
    [AC_MSG_ERROR([ucx_info not found: apt-get install ucx-utils (the UCX transport takes UCX's build configuration from `ucx_info -b`)])])
  AC_PATH_PROG([UCX_PERFTEST], [ucx_perftest], [no])
  ucx_info_version=`$UCX_INFO -v | sed -n 's/^# Version //p'`
  AS_IF([test "x$ucx_info_version" != "x$ucx_version"],
    [AC_MSG_ERROR([ucx_info reports UCX $ucx_info_version but libucx-dev is $ucx_version: install matching ucx-utils and libucx-dev])])

  AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
      [unpacked source of the installed UCX version, for the UCT transport
       (default: ucx-src/ucx-VERSION in the build directory, where
       `bash tests/setup.sh` puts `apt-get source ucx`)])],
    [ucx_src=$withval], [ucx_src=$ac_pwd/ucx-src/ucx-$ucx_version])
  AC_MSG_CHECKING([for the source of UCX $ucx_version])
  AS_IF([test ! -f "$ucx_src/src/uct/base/uct_iface.h" || test ! -f "$ucx_src/configure.ac"], [
    AC_MSG_RESULT([no])
    AC_MSG_ERROR([the source of the installed UCX $ucx_version is not at $ucx_src
  (missing src/uct/base/uct_iface.h). UCT's internal headers are not in libucx-dev;
  the UCX transport (uct/) is built against Debian's own source package of the
  installed version. Run `bash tests/setup.sh check` (it adds a deb-src entry
  and runs `apt-get source ucx` into the build directory's ucx-src/), or unpack
  that source package yourself and pass --with-ucx-src=DIR.])])
  ucx_src_version=`sed -n 's/^.efine(.ucx_ver_\(major\|minor\|patch\)., *\(@<:@0-9@:>@*\)).*/\2/p' "$ucx_src/configure.ac" | paste -sd.`
  AC_MSG_RESULT([$ucx_src ($ucx_src_version)])
  AS_IF([test "x$ucx_src_version" != "x$ucx_version"],
    [AC_MSG_ERROR([the UCX source at $ucx_src is version $ucx_src_version but the installed UCX is $ucx_version: the transport must be built against the installed version's own headers (apt-get source ucx=<the version of libucx0>)])])
  for h in uct/api/uct.h uct/api/tl.h uct/api/uct_def.h ucs/type/status.h ucs/config/types.h; do
    AS_IF([! cmp -s "$ucx_src/src/$h" "$ucx_includedir/$h"],
      [AC_MSG_ERROR([$ucx_src/src/$h differs from the installed $ucx_includedir/$h: that source tree is not the one the installed UCX $ucx_version was built from])])
  done

  dnl UCX's own config.h, as the installed library was configured.
  ucx_config_dir=uct/ucx-config
  AS_MKDIR_P([$ucx_config_dir])
  $UCX_INFO -b > "$ucx_config_dir/config.h.tmp" && grep -q '^#define ENABLE_MT' "$ucx_config_dir/config.h.tmp" ||
    AC_MSG_ERROR([`ucx_info -b` did not print UCX's build configuration])
  mv "$ucx_config_dir/config.h.tmp" "$ucx_config_dir/config.h"

  AC_ARG_WITH([ucx-module-dir],
    [AS_HELP_STRING([--with-ucx-module-dir=DIR],
      [where to install libuct_hpam.so (default: LIBDIR/ucx, UCX's module directory
       for a UCX of the same prefix; it is loaded with LD_PRELOAD from there)])],
    [uctmoduledir=$withval], [uctmoduledir='${libdir}/ucx'])
  AC_SUBST([uctmoduledir])

  UCX_SRC=$ucx_src
  UCX_VERSION=$ucx_version
  UCX_INTERNAL_CPPFLAGS="-include \$(top_builddir)/$ucx_config_dir/config.h -iquote \$(top_builddir)/$ucx_config_dir -I$ucx_src/src"
  AC_SUBST([UCX_SRC])
  AC_SUBST([UCX_VERSION])
  AC_SUBST([UCX_INTERNAL_CPPFLAGS])
])
