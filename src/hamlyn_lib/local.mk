# src/hamlyn_lib: the Hamlyn library's upper layer (OSDI'96 3.3) — the
# hamlyn_manager, receiver end points and seeds, and the simple datagram,
# stream and tagged remote write protocols, over the emulated Hamlyn card
# (nic/hamlyn) alone: beside am and deposit, below capi.
src_libhpam_core_la_SOURCES += \
  src/hamlyn_lib/hamlyn_manager.hpp src/hamlyn_lib/hamlyn_manager.cpp \
  src/hamlyn_lib/datagram.hpp src/hamlyn_lib/datagram.cpp \
  src/hamlyn_lib/tagged_write.hpp src/hamlyn_lib/tagged_write.cpp \
  src/hamlyn_lib/stream.hpp src/hamlyn_lib/stream_receiver.cpp src/hamlyn_lib/stream_sender.cpp

# libhpam_hamlyn.so: the installed C++ interface (hpam_hamlyn.hpp, the
# paper's names in namespace hpam::hamlyn, pimpl over the layer above). The
# core is linked in whole; the version script exports hpam::hamlyn alone.
include_HEADERS += src/include/hpam_hamlyn.hpp
src_libhpam_core_la_SOURCES += src/include/hpam_hamlyn.hpp src/hamlyn_lib/hamlyn_api.cpp
lib_LTLIBRARIES += src/hamlyn_lib/libhpam_hamlyn.la
src_hamlyn_lib_libhpam_hamlyn_la_SOURCES =
nodist_EXTRA_src_hamlyn_lib_libhpam_hamlyn_la_SOURCES = src/capi/link_as_cxx.cpp
src_hamlyn_lib_libhpam_hamlyn_la_LIBADD = src/libhpam_core.la
src_hamlyn_lib_libhpam_hamlyn_la_LDFLAGS = -version-info 0:0:0 -no-undefined \
  -Wl,--version-script=$(srcdir)/src/hamlyn_lib/libhpam_hamlyn.map $(AM_LDFLAGS)
EXTRA_src_hamlyn_lib_libhpam_hamlyn_la_DEPENDENCIES = src/hamlyn_lib/libhpam_hamlyn.map
EXTRA_DIST += src/hamlyn_lib/libhpam_hamlyn.map
EXTRA_DIST += src/hamlyn_lib/hpam-hamlyn.pc.in
pkgconfig_in += src/hamlyn_lib/hpam-hamlyn.pc.in
