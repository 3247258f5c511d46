# tests/uct: the UCX transport. GoogleTest for its own logic (rkeys,
# capabilities, parameters, pending/resource behaviour, order over a faulty
# wire) through UCT's public API in one process, and the project's MPI
# programs over pml ucx / osc ucx with UCX_TLS=hpam,self; UCX's own tools
# (ucx_info, ucx_perftest) over the preloaded transport.
dist_noinst_SCRIPTS += tests/uct/mpi_ucx.sh tests/uct/ucx_tools.sh tests/uct/ucx_gtest.sh
EXTRA_DIST += tests/uct/ucx_gtest.mk
if HPAM_UCX
check_PROGRAMS += tests/uct/test_uct
TESTS += tests/uct/test_uct
tests_uct_test_uct_SOURCES = \
  tests/uct/uct_fixture.hpp \
  tests/uct/test_uct_config.cc tests/uct/test_uct_am.cc tests/uct/test_uct_rma.cc \
  tests/uct/test_uct_churn.cc tests/uct/test_uct_atomics.cc
tests_uct_test_uct_CPPFLAGS = -I$(top_srcdir)/uct -I$(top_srcdir)/src/include $(UCX_CFLAGS)
tests_uct_test_uct_CXXFLAGS = $(TEST_CXXFLAGS)
# The transport linked in whole (its constructor registers the component,
# and the unit tests call functions libuct_hpam.so does not export).
tests_uct_test_uct_LDFLAGS = -Wl,--whole-archive,uct/.libs/libuct_hpam_tl.a,--no-whole-archive $(AM_LDFLAGS)
tests_uct_test_uct_LDADD = src/libhpam_core.la $(UCX_LIBS) $(GTEST_LIBS) -lgtest_main
tests_uct_test_uct_DEPENDENCIES = uct/libuct_hpam_tl.la src/libhpam_core.la uct/libuct_hpam.la
TESTS += tests/uct/mpi_ucx.sh tests/uct/ucx_tools.sh
endif

# UCX's own UCT test suite over hpam (not part of check: see README, "UCX's
# own tests"): builds it once into ucx-gtest/, runs it on both cards without
# and with faults, prints the table.
if HPAM_UCX
ucx-gtest: uct/libuct_hpam.la
	HPAM_BUILDDIR=$(abs_top_builddir) UCX_SRC=$(UCX_SRC) bash $(top_srcdir)/tests/uct/ucx_gtest.sh all
else
ucx-gtest:
	@echo "make ucx-gtest: configure built no UCX transport (see its summary); nothing to run"
endif
.PHONY: ucx-gtest
