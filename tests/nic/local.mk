# tests/nic: the emulated cards and the wire (one GoogleTest binary).
check_PROGRAMS += tests/nic/test_nic
TESTS += tests/nic/test_nic
tests_nic_test_nic_SOURCES = \
  tests/nic/medusa_test_util.hpp \
  tests/nic/test_medusa.cc \
  tests/nic/test_medusa_faults.cc \
  tests/nic/test_wire.cc
tests_nic_test_nic_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_test_nic_LDADD = $(TEST_LDADD) -lgtest_main
