# uct: the UCX transport libuct_hpam.so (UCT component "hpam"), built against
# the installed UCX version's own internal headers (configure: --with-ucx-src)
# and loaded with LD_PRELOAD (see README, "UCX over hpam").
# configure builds it only when UCX, ucx_info and that source are found
# (HPAM_UCX; see m4/hpam_ucx.m4).
EXTRA_DIST += uct/libuct_hpam.map
# UCX's config.h, written by configure from `ucx_info -b`.
DISTCLEANFILES += uct/ucx-config/config.h
if HPAM_UCX
# The transport's objects are a convenience library: linked whole into
# libuct_hpam.so (which exports nothing, see libuct_hpam.map) and into
# tests/uct/test_uct, whose unit tests call its internal functions.
noinst_LTLIBRARIES += uct/libuct_hpam_tl.la
uctmodule_LTLIBRARIES = uct/libuct_hpam.la
uct_libuct_hpam_tl_la_SOURCES = \
  uct/uct_hpam.h \
  uct/uct_hpam_md.c \
  uct/uct_hpam_md_config.c \
  uct/uct_hpam_iface.c \
  uct/uct_hpam_iface_open.c \
  uct/uct_hpam_ep.c \
  uct/uct_hpam_am.c \
  uct/uct_hpam_rma.c \
  uct/uct_hpam_flush.c \
  uct/uct_hpam_registry.h uct/uct_hpam_registry.c \
  uct/uct_hpam_rkey.h uct/uct_hpam_rkey.c
# UCX's internal headers: its config.h (from `ucx_info -b`) forced first into
# every file and found by -iquote when UCX's headers include it (so that no
# other config.h is picked up), and its source tree before /usr/include.
uct_libuct_hpam_tl_la_CPPFLAGS = $(UCX_INTERNAL_CPPFLAGS) -I$(top_srcdir)/src/include \
  -I$(top_srcdir)/src/capi $(UCX_CFLAGS)
uct_libuct_hpam_tl_la_CFLAGS = $(AM_CFLAGS) -Wno-sign-compare -Wno-missing-field-initializers -Wno-type-limits
# The core is C++: link with the C++ driver.
uct_libuct_hpam_la_SOURCES =
nodist_EXTRA_uct_libuct_hpam_la_SOURCES = uct/link_as_cxx.cpp
uct_libuct_hpam_la_LDFLAGS = -module -avoid-version -shared \
  -Wl,--version-script=$(srcdir)/uct/libuct_hpam.map $(AM_LDFLAGS)
uct_libuct_hpam_la_LIBADD = uct/libuct_hpam_tl.la src/libhpam_core.la $(UCX_LIBS)
EXTRA_uct_libuct_hpam_la_DEPENDENCIES = uct/libuct_hpam.map
endif
