# uct: the UCX transport libuct_hpam.so (UCT component "hpam"), built against
# the installed UCX version's own internal headers (configure: --with-ucx-src)
# and loaded with LD_PRELOAD (see README, "UCX over hpam").
lib_LTLIBRARIES += uct/libuct_hpam.la
uct_libuct_hpam_la_SOURCES = \
  uct/hpam_uct.h \
  uct/hpam_md.c \
  uct/hpam_md_config.c \
  uct/hpam_iface.c \
  uct/hpam_iface_open.c \
  uct/hpam_ep.c \
  uct/hpam_am.c \
  uct/hpam_rma.c \
  uct/hpam_registry.h uct/hpam_registry.c \
  uct/hpam_rkey.h uct/hpam_rkey.c
# The core is C++: link with the C++ driver.
nodist_EXTRA_uct_libuct_hpam_la_SOURCES = uct/link_as_cxx.cpp
# UCX's internal headers: its config.h (from `ucx_info -b`) by -iquote, so
# that no other config.h is picked up, and its source tree before /usr/include.
uct_libuct_hpam_la_CPPFLAGS = $(UCX_INTERNAL_CPPFLAGS) -I$(top_srcdir)/src/include $(UCX_CFLAGS)
uct_libuct_hpam_la_CFLAGS = $(AM_CFLAGS) -Wno-sign-compare -Wno-missing-field-initializers -Wno-type-limits
uct_libuct_hpam_la_LDFLAGS = -avoid-version -shared $(AM_LDFLAGS)
uct_libuct_hpam_la_LIBADD = src/libhpam_core.la $(UCX_LIBS)
