# tests/sys: shared segments, rings, CRC32C, clock, keys, placement.
check_PROGRAMS += tests/sys/test_sys
TESTS += tests/sys/test_sys
tests_sys_test_sys_SOURCES = \
  tests/sys/test_ring.cc \
  tests/sys/test_cell_fifo.cc \
  tests/sys/test_crc32c.cc \
  tests/sys/test_shared_segment.cc \
  tests/sys/test_misc.cc \
  tests/sys/test_short_copy.cc
tests_sys_test_sys_CXXFLAGS = $(TEST_CXXFLAGS)
tests_sys_test_sys_LDADD = $(TEST_LDADD) -lgtest_main
