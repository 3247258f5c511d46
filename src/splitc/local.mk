# src/splitc: a Split-C style global address space on MPI-3 RMA (installed
# library libhpam_splitc and header hpam_splitc.h); used by bench/apps.
lib_LTLIBRARIES += src/splitc/libhpam_splitc.la
include_HEADERS += src/include/hpam_splitc.h
src_splitc_libhpam_splitc_la_SOURCES = \
  src/splitc/runtime.hpp src/splitc/runtime.cpp \
  src/splitc/heap.cpp src/splitc/spread.cpp \
  src/splitc/access.cpp src/splitc/store.cpp src/splitc/coalesce.cpp src/splitc/collective.cpp
# The C bindings only: no MPI C++ bindings (and no libmpi_cxx) in a C library.
src_splitc_libhpam_splitc_la_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_CPPFLAGS) -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1
src_splitc_libhpam_splitc_la_LDFLAGS = -version-info 0:0:0 \
  -Wl,--version-script=$(srcdir)/src/splitc/libhpam_splitc.map $(AM_LDFLAGS)
EXTRA_src_splitc_libhpam_splitc_la_DEPENDENCIES = src/splitc/libhpam_splitc.map
src_splitc_libhpam_splitc_la_LIBADD = $(MPI_LIBS)
EXTRA_DIST += src/splitc/hpam-splitc.pc.in src/splitc/libhpam_splitc.map
pkgconfig_in += src/splitc/hpam-splitc.pc.in
