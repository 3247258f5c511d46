# uct: the UCX transport libuct_hpam.so (UCT component "hpam"), built against
# the installed UCX version's own internal headers (configure: --with-ucx-src)
# and loaded with LD_PRELOAD (see README, "UCX over hpam").
lib_LTLIBRARIES += uct/libuct_hpam.la
uct_libuct_hpam_la_SOURCES = \
  uct/uct_hpam.h \
  uct/uct_hpam_md.c \
  uct/uct_hpam_md_config.c \
  uct/uct_hpam_iface.c \
  uct/uct_hpam_iface_open.c \
  uct/uct_hpam_ep.c \
  uct/uct_hpam_am.c \
  uct/uct_hpam_rma.c \
  uct/uct_hpam_registry.h uct/uct_hpam_registry.c \
  uct/uct_hpam_rkey.h uct/uct_hpam_rkey.c
# The core is C++: link with the C++ driver.
nodist_EXTRA_uct_libuct_hpam_la_SOURCES = uct/link_as_cxx.cpp
# UCX's internal headers: its config.h (from `ucx_info -b`) forced first into
# every file and found by -iquote when UCX's headers include it (so that no
# other config.h is picked up), and its source tree before /usr/include.
uct_libuct_hpam_la_CPPFLAGS = $(UCX_INTERNAL_CPPFLAGS) -I$(top_srcdir)/src/include $(UCX_CFLAGS)
uct_libuct_hpam_la_CFLAGS = $(AM_CFLAGS) -Wno-sign-compare -Wno-missing-field-initializers -Wno-type-limits
uct_libuct_hpam_la_LDFLAGS = -avoid-version -shared $(AM_LDFLAGS)
uct_libuct_hpam_la_LIBADD = src/libhpam_core.la $(UCX_LIBS)
