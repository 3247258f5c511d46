# tests/nic: the Medusa card (tests/nic/medusa/) and the faulty wire
# (tests/nic/wire/), one GoogleTest binary; the Hamlyn card has its own
# (tests/nic/hamlyn/local.mk). Each directory mirrors its src/nic/ one.
check_PROGRAMS += tests/nic/test_nic
TESTS += tests/nic/test_nic
tests_nic_test_nic_SOURCES = \
  tests/nic/medusa/medusa_test_util.hpp \
  tests/nic/medusa/test_medusa.cc \
  tests/nic/medusa/test_medusa_by_reference.cc \
  tests/nic/medusa/test_medusa_headless.cc \
  tests/nic/medusa/test_medusa_faults.cc \
  tests/nic/wire/test_wire.cc
tests_nic_test_nic_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_test_nic_LDADD = $(TEST_LDADD) -lgtest_main
