# src/capi: the floor between the core and its users — the C API of
# hpam_am.h and hpam_deposit.h, the one status mapping, the one knob table
# (hpam_knobs.h), the instantiation of the protocol for each card, and the
# front ends' shared services (hpam_frontend.h: in-order delivery, pending
# sends, deposit operations in flight), which btl/ and uct/ include.
include_HEADERS += src/include/hpam_am.h src/include/hpam_deposit.h src/include/hpam_knobs.h
src_libhpam_core_la_SOURCES += \
  src/capi/c_api.hpp src/capi/c_api.cpp src/capi/c_ops.hpp \
  src/capi/background_resend.hpp src/capi/background_resend.cpp \
  src/capi/knobs.hpp src/capi/knobs.cpp \
  src/capi/endpoint_medusa.cpp src/capi/endpoint_hamlyn.cpp \
  src/capi/deposit_c_api.cpp \
  src/capi/hpam_frontend.h src/capi/frontend_order.cpp src/capi/frontend_pending.cpp \
  src/capi/frontend_rdma.cpp

# libhpam.so: the C API above, installed for programs (hpam.pc). The core is
# linked in whole; the version script exports the hpam_* functions alone.
# The BTL and the UCX transport link the core themselves (see README,
# "Install"), so MPI and UCX users get no run-time dependency on it.
lib_LTLIBRARIES += src/capi/libhpam.la
src_capi_libhpam_la_SOURCES =
nodist_EXTRA_src_capi_libhpam_la_SOURCES = src/capi/link_as_cxx.cpp
src_capi_libhpam_la_LIBADD = src/libhpam_core.la
src_capi_libhpam_la_LDFLAGS = -version-info 0:0:0 -no-undefined \
  -Wl,--version-script=$(srcdir)/src/capi/libhpam.map $(AM_LDFLAGS)
EXTRA_src_capi_libhpam_la_DEPENDENCIES = src/capi/libhpam.map
EXTRA_DIST += src/capi/libhpam.map src/capi/hpam.pc.in src/capi/README.md
pkgconfig_in += src/capi/hpam.pc.in
