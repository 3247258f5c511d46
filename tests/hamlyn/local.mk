# tests/hamlyn: the Hamlyn card (in one process and forked), and the HPAM
# protocol's card interface over it.
check_PROGRAMS += tests/hamlyn/test_hamlyn
TESTS += tests/hamlyn/test_hamlyn
tests_hamlyn_test_hamlyn_SOURCES = \
  tests/common/test_util.hpp tests/hamlyn/hamlyn_fixture.hpp \
  tests/hamlyn/test_hamlyn_card.cc
tests_hamlyn_test_hamlyn_CXXFLAGS = $(TEST_CXXFLAGS)
tests_hamlyn_test_hamlyn_LDADD = $(TEST_LDADD) -lgtest_main
tests_hamlyn_test_hamlyn_SOURCES += \
  tests/hamlyn/test_hamlyn_fork.cc tests/hamlyn/test_hamlyn_am_card.cc \
  tests/hamlyn/test_hamlyn_hostile.cc tests/hamlyn/test_hamlyn_inline.cc \
  tests/hamlyn/test_hamlyn_queue.cc
