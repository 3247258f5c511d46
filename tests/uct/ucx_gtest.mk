# UCX's own UCT test suite (test/gtest of the UCX source), built against the
# installed (Debian) UCX libraries: only the UCT test sources and the common
# test support, with UCX's bundled GoogleTest, and UCX's build configuration
# from `ucx_info -b` (the internal structures the tests touch then have the
# installed layout, as for libuct_hpam.so). Used by tests/uct/ucx_gtest.sh:
#   make -f ucx_gtest.mk UCX_SRC=<ucx source> OUT=<build dir>
# The sources are compiled from a copy under $(OUT)/src in which the test
# lists name hpam (see the script); nothing in the UCX source is modified.
UCX_SRC ?= $(error UCX_SRC: the unpacked UCX source)
OUT ?= $(error OUT: the build directory)
CXX ?= g++
# -O1: the suite runs the transports' hot paths under the wire's faults;
# -g0 keeps the compile short on a shared machine.
UCX_GTEST_CXXFLAGS ?= -O1 -g0
G := $(OUT)/src/test/gtest

common := main test_gtest_cmn mem_buffer test_helpers test_watchdog test
gtest_lib := gtest gtest-death-test gtest-filepath gtest-port gtest-printers \
             gtest-test-part gtest-typed-test
uct := uct_test uct_p2p_test test_amo test_amo_add_xor test_amo_and_or \
       test_amo_cswap test_amo_fadd_fxor test_amo_fand_for test_amo_swap \
       test_event test_fence test_flush test_many2one_am test_md test_mem \
       test_p2p_am test_p2p_err test_p2p_mix test_p2p_rma test_pending \
       test_progress test_uct_ep test_zcopy_comp test_peer_failure test_stats \
       v2/test_uct_query

objs := $(common:%=$(OUT)/obj/common/%.o) \
        $(gtest_lib:%=$(OUT)/obj/common/googletest/%.o) \
        $(uct:%=$(OUT)/obj/uct/%.o)

CPPFLAGS := -include $(OUT)/config.h -DTOP_SRCDIR=\"$(UCX_SRC)\" \
            -DGTEST_UCM_HOOK_LIB_DIR=\"$(OUT)\" \
            -I$(UCX_SRC)/src -I$(OUT)/src/test -I$(G)
CXXFLAGS := -std=c++11 $(UCX_GTEST_CXXFLAGS) -fno-tree-vectorize -pthread -w

$(OUT)/gtest: $(objs)
	$(CXX) -pthread -o $@ $^ -Wl,--dynamic-list-data -lucp -luct -lucs -lucm -ldl

$(OUT)/obj/%.o: $(G)/%.cc $(OUT)/config.h
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c -o $@ $<

-include $(objs:.o=.d)
