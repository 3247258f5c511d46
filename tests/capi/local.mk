# tests/capi: the C API floor — hpam_am.h over both cards (test_c_api.cc),
# the knob table and its front-end naming, and the front ends' shared
# services (hpam_frontend.h).
check_PROGRAMS += tests/capi/test_capi
TESTS += tests/capi/test_capi
tests_capi_test_capi_SOURCES = tests/common/test_util.hpp tests/capi/test_c_api.cc tests/capi/test_knobs.cc \
  tests/capi/test_frontend.cc
tests_capi_test_capi_CXXFLAGS = $(TEST_CXXFLAGS)
tests_capi_test_capi_LDADD = $(TEST_LDADD) -lgtest_main
