# tests/am: the protocol over every card, in one process and forked.
check_PROGRAMS += tests/am/test_am
TESTS += tests/am/test_am
tests_am_test_am_SOURCES = \
  tests/common/test_util.hpp tests/am/protocol_fixture.hpp tests/am/hostile_peer.hpp \
  tests/am/test_protocol.cc tests/am/test_hostile.cc tests/am/test_job_key.cc tests/am/test_protocol_fork.cc \
  tests/am/test_order.cc tests/am/test_sequence.cc tests/am/test_liveness.cc tests/am/test_ack_rows.cc \
  tests/am/test_multi_ack.cc tests/am/test_loss_recovery.cc tests/am/test_deferred_acks.cc \
  tests/am/test_by_reference.cc
tests_am_test_am_CXXFLAGS = $(TEST_CXXFLAGS)
tests_am_test_am_LDADD = $(TEST_LDADD) -lgtest_main
