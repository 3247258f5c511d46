# tests/nic: the emulated cards and the wire.
check_PROGRAMS += tests/nic/test_medusa
TESTS += tests/nic/test_medusa
tests_nic_test_medusa_SOURCES = \
  tests/nic/medusa_test_util.hpp \
  tests/nic/test_medusa.cc
tests_nic_test_medusa_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_test_medusa_LDADD = $(TEST_LDADD) -lgtest_main
