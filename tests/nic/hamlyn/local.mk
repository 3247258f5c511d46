# tests/nic/hamlyn: the Hamlyn card (in one process and forked), and the
# HPAM protocol's card interface over it.
check_PROGRAMS += tests/nic/hamlyn/test_hamlyn
TESTS += tests/nic/hamlyn/test_hamlyn
tests_nic_hamlyn_test_hamlyn_SOURCES = \
  tests/common/test_util.hpp tests/nic/hamlyn/hamlyn_fixture.hpp \
  tests/nic/hamlyn/test_hamlyn_card.cc
tests_nic_hamlyn_test_hamlyn_CXXFLAGS = $(TEST_CXXFLAGS)
tests_nic_hamlyn_test_hamlyn_LDADD = $(TEST_LDADD) -lgtest_main
tests_nic_hamlyn_test_hamlyn_SOURCES += \
  tests/nic/hamlyn/test_hamlyn_fork.cc tests/nic/hamlyn/test_hamlyn_am_card.cc \
  tests/nic/hamlyn/test_hamlyn_hostile.cc tests/nic/hamlyn/test_hamlyn_inline.cc \
  tests/nic/hamlyn/test_hamlyn_queue.cc tests/nic/hamlyn/test_hamlyn_holds.cc
