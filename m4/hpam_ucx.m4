# HPAM_CHECK_UCX: the UCX transport (uct/, libuct_hpam.so) is optional.
#
# UCT's component, memory-domain and interface structures (src/uct/base/) are
# internal to UCX and not in libucx-dev, so the transport is compiled against
# the headers of Debian's own source package of the installed version (a
# build input fetched by `apt-get source ucx`, never committed), with UCX's
# build configuration (config.h) taken from the installed library itself
# (`ucx_info -b`), so that the internal structures have the installed layout.
#
# Without --with-ucx or --with-ucx-src the transport is built when all of
# that is found, and otherwise left out with the reason (hpam_ucx_why) and
# how to get it (hpam_ucx_how) in configure's summary; with either option a
# missing piece is an error naming it; --without-ucx leaves it out.
AC_DEFUN([HPAM_CHECK_UCX], [
  AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx@<:@=yes|no@:>@],
      [build the UCX transport libuct_hpam.so (default: when UCX, ucx_info and
       the installed UCX's source are found; yes: fail if they are not)])],
    [], [with_ucx=check])
  AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
      [unpacked source of the installed UCX version, for the UCX transport;
       implies --with-ucx (default: ucx-src/ucx-VERSION in the build directory,
       where `bash tests/setup.sh` puts `apt-get source ucx`)])],
    [AS_IF([test "x$with_ucx" = xno],
       [AC_MSG_ERROR([--with-ucx-src=$withval and --without-ucx contradict each other])])
     ucx_src=$withval
     with_ucx=yes],
    [ucx_src=])
  AC_ARG_WITH([ucx-module-dir],
    [AS_HELP_STRING([--with-ucx-module-dir=DIR],
      [where to install libuct_hpam.so (default: LIBDIR/ucx, UCX's module directory
       for a UCX of the same prefix; it is loaded with LD_PRELOAD from there)])],
    [uctmoduledir=$withval], [uctmoduledir='${libdir}/ucx'])
  AC_SUBST([uctmoduledir])

  hpam_ucx=no
  hpam_ucx_why=
  hpam_ucx_how=
  AS_CASE([$with_ucx],
    [no], [hpam_ucx_why="disabled by --without-ucx"],
    [yes|check], [_HPAM_PROBE_UCX],
    [AC_MSG_ERROR([--with-ucx=$with_ucx: use --with-ucx, --without-ucx or --with-ucx-src=DIR])])
  AS_IF([test "x$hpam_ucx" != xyes && test "x$with_ucx" = xyes],
    [AC_MSG_ERROR([the UCX transport was asked for (--with-ucx or --with-ucx-src) but cannot be built:
  $hpam_ucx_why
  $hpam_ucx_how])])
  AS_IF([test "x$hpam_ucx" != xyes && test "x$with_ucx" = xcheck],
    [AC_MSG_WARN([the UCX transport (libuct_hpam.so) will not be built: $hpam_ucx_why])])
  AM_CONDITIONAL([HPAM_UCX], [test "x$hpam_ucx" = xyes])
  dnl make distcheck builds the transport too when this build does.
  HPAM_DISTCHECK_UCX=
  AS_IF([test "x$hpam_ucx" = xyes], [HPAM_DISTCHECK_UCX="--with-ucx-src=$UCX_SRC"])
  AC_SUBST([HPAM_DISTCHECK_UCX])
  AC_SUBST([UCX_SRC])
  AC_SUBST([UCX_VERSION])
  AC_SUBST([UCX_INTERNAL_CPPFLAGS])
])

# _HPAM_PROBE_UCX: sets hpam_ucx=yes, or hpam_ucx_why and hpam_ucx_how at the
# first thing missing (the loop runs once; `break` ends the probe).
AC_DEFUN([_HPAM_PROBE_UCX], [
  while :; do
    PKG_CHECK_MODULES([UCX], [ucx], [],
      [hpam_ucx_why="UCX's development files were not found (pkg-config ucx)"
       hpam_ucx_how="apt-get install libucx-dev ucx-utils"
       break])
    ucx_version=`$PKG_CONFIG --modversion ucx`
    ucx_includedir=`$PKG_CONFIG --variable=includedir ucx`
    AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
    AS_IF([test "x$UCX_INFO" = xno],
      [hpam_ucx_why="ucx_info was not found (the transport takes UCX's build configuration from \`ucx_info -b')"
       hpam_ucx_how="apt-get install ucx-utils"
       break])
    AC_PATH_PROG([UCX_PERFTEST], [ucx_perftest], [no])
    ucx_info_version=`$UCX_INFO -v | sed -n 's/^# Version //p'`
    AS_IF([test "x$ucx_info_version" != "x$ucx_version"],
      [hpam_ucx_why="ucx_info reports UCX $ucx_info_version but libucx-dev is $ucx_version"
       hpam_ucx_how="install matching ucx-utils and libucx-dev"
       break])
    ucx_debian_version=`(dpkg-query -W -f='${source:Version}' libucx0) 2>/dev/null`
    test -n "$ucx_debian_version" || ucx_debian_version=$ucx_version
    ucx_fetch_how="run \`bash tests/setup.sh check' (it fetches it with apt-get source ucx into the build directory's ucx-src/), or unpack \`apt-get source ucx=$ucx_debian_version' and pass --with-ucx-src=DIR"
    test -n "$ucx_src" || ucx_src=$ac_pwd/ucx-src/ucx-$ucx_version
    AC_MSG_CHECKING([for the source of UCX $ucx_version])
    AS_IF([test ! -f "$ucx_src/src/uct/base/uct_iface.h" || test ! -f "$ucx_src/configure.ac"],
      [AC_MSG_RESULT([no])
       hpam_ucx_why="the source of the installed UCX $ucx_version is not at $ucx_src (UCT's internal headers, which the transport is compiled against, are not in libucx-dev)"
       hpam_ucx_how=$ucx_fetch_how
       break])
    ucx_src_version=`sed -n 's/^.efine(.ucx_ver_\(major\|minor\|patch\)., *\(@<:@0-9@:>@*\)).*/\2/p' "$ucx_src/configure.ac" | paste -sd.`
    AC_MSG_RESULT([$ucx_src ($ucx_src_version)])
    AS_IF([test "x$ucx_src_version" != "x$ucx_version"],
      [hpam_ucx_why="the UCX source at $ucx_src is version $ucx_src_version but the installed UCX is $ucx_version (the transport must be built against the installed version's own headers)"
       hpam_ucx_how=$ucx_fetch_how
       break])
    for h in uct/api/uct.h uct/api/tl.h uct/api/uct_def.h ucs/type/status.h ucs/config/types.h; do
      AS_IF([! cmp -s "$ucx_src/src/$h" "$ucx_includedir/$h"],
        [hpam_ucx_why="$ucx_src/src/$h differs from the installed $ucx_includedir/$h: that source tree is not the one the installed UCX $ucx_version was built from"
         hpam_ucx_how=$ucx_fetch_how
         break])
    done
    test -z "$hpam_ucx_why" || break

    dnl UCX's own config.h, as the installed library was configured.
    ucx_config_dir=uct/ucx-config
    AS_MKDIR_P([$ucx_config_dir])
    AS_IF([! $UCX_INFO -b > "$ucx_config_dir/config.h.tmp" || ! grep -q '^#define ENABLE_MT' "$ucx_config_dir/config.h.tmp"],
      [rm -f "$ucx_config_dir/config.h.tmp"
       hpam_ucx_why="\`ucx_info -b' did not print UCX's build configuration"
       hpam_ucx_how="reinstall ucx-utils"
       break])
    mv "$ucx_config_dir/config.h.tmp" "$ucx_config_dir/config.h"

    UCX_SRC=$ucx_src
    UCX_VERSION=$ucx_version
    UCX_INTERNAL_CPPFLAGS="-include \$(top_builddir)/$ucx_config_dir/config.h -iquote \$(top_builddir)/$ucx_config_dir -I$ucx_src/src"
    hpam_ucx=yes
    break
  done
])
