# tests/hamlyn_lib: the Hamlyn library's upper layer — manager, seeds, the
# datagram, stream and tagged remote write protocols (in one process, and
# across forked processes), against forged seeds, tickets and metadata.
check_PROGRAMS += tests/hamlyn_lib/test_hamlyn_lib
TESTS += tests/hamlyn_lib/test_hamlyn_lib
tests_hamlyn_lib_test_hamlyn_lib_SOURCES = \
  tests/common/test_util.hpp tests/nic/hamlyn/hamlyn_fixture.hpp tests/hamlyn_lib/lib_fixture.hpp \
  tests/hamlyn_lib/test_manager.cc tests/hamlyn_lib/test_datagram.cc \
  tests/hamlyn_lib/test_tagged_write.cc tests/hamlyn_lib/test_stream.cc \
  tests/hamlyn_lib/test_public_api.cc
tests_hamlyn_lib_test_hamlyn_lib_CXXFLAGS = $(TEST_CXXFLAGS)
tests_hamlyn_lib_test_hamlyn_lib_LDADD = $(TEST_LDADD) -lgtest_main
