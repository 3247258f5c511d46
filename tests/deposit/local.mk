# tests/deposit: hybrid deposit operations, and put/get/atomics by ticket in
# one process and across forked processes.
check_PROGRAMS += tests/deposit/test_deposit
TESTS += tests/deposit/test_deposit
tests_deposit_test_deposit_SOURCES = \
  tests/common/test_util.hpp tests/deposit/endpoint_pair.hpp \
  tests/deposit/test_hybrid_op.cc tests/deposit/test_deposit.cc tests/deposit/test_deposit_fork.cc \
  tests/deposit/test_two_jobs.cc tests/deposit/test_deposit_batch.cc tests/deposit/test_deposit_now.cc
tests_deposit_test_deposit_CXXFLAGS = $(TEST_CXXFLAGS)
tests_deposit_test_deposit_LDADD = $(TEST_LDADD) -lgtest_main
