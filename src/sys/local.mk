# sys: shared segments, placement, clock, CRC32C, protection keys, rings.
noinst_LTLIBRARIES += src/libhpam_core.la
src_libhpam_core_la_SOURCES = \
  src/sys/status.hpp src/sys/status.cpp \
  src/sys/clock.hpp src/sys/clock.cpp \
  src/sys/crc32c.hpp src/sys/crc32c.cpp \
  src/sys/protection_key.hpp src/sys/protection_key.cpp \
  src/sys/shared_segment.hpp src/sys/shared_segment.cpp \
  src/sys/placement.hpp src/sys/placement.cpp \
  src/sys/process_state.hpp src/sys/process_state.cpp \
  src/sys/membarrier.hpp src/sys/membarrier.cpp \
  src/sys/ring.hpp src/sys/align.hpp src/sys/cell_fifo.hpp \
  src/sys/short_copy.hpp src/sys/prefetch.hpp src/sys/hot_page.hpp
src_libhpam_core_la_LIBADD = $(HWLOC_LIBS) -lrt -lpthread
