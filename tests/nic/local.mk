# tests/nic: the emulated cards and the wire.
check_PROGRAMS += tests/nic/test_medusa tests/nic/test_wire
TESTS += tests/nic/test_medusa tests/nic/test_wire
tests_nic_test_medusa_SOURCES = \
  tests/nic/medusa_test_util.hpp \
  tests/nic/test_medusa.cc \
  tests/nic/test_medusa_faults.cc
tests_nic_test_medusa_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_test_medusa_LDADD = $(TEST_LDADD) -lgtest_main
tests_nic_test_wire_SOURCES = tests/nic/test_wire.cc
tests_nic_test_wire_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_test_wire_LDADD = $(TEST_LDADD) -lgtest_main
