# tests/gam: the GAM basic benchmarks and torture tests of HP-LAM section 4.1
# over the native API, as forked processes. Built by `make` (bench/run runs
# them at size); tests/gam/gam.sh runs them small in make check.
GAM_COMMON = tests/gam/gam_harness.hpp tests/common/test_util.hpp
noinst_PROGRAMS += tests/gam/ping_pong tests/gam/ping_bulk tests/gam/thru_bulk \
  tests/gam/test_xfer tests/gam/test_med
tests_gam_ping_pong_SOURCES = tests/gam/ping_pong.cc $(GAM_COMMON)
tests_gam_ping_pong_LDADD = src/libhpam_core.la
tests_gam_ping_bulk_SOURCES = tests/gam/ping_bulk.cc $(GAM_COMMON)
tests_gam_ping_bulk_LDADD = src/libhpam_core.la
tests_gam_thru_bulk_SOURCES = tests/gam/thru_bulk.cc $(GAM_COMMON)
tests_gam_thru_bulk_LDADD = src/libhpam_core.la
tests_gam_test_xfer_SOURCES = tests/gam/test_xfer.cc tests/gam/torture.cc tests/gam/torture.hpp $(GAM_COMMON)
tests_gam_test_xfer_LDADD = src/libhpam_core.la
tests_gam_test_med_SOURCES = tests/gam/test_med.cc tests/gam/torture.cc tests/gam/torture.hpp $(GAM_COMMON)
tests_gam_test_med_LDADD = src/libhpam_core.la
TESTS += tests/gam/gam.sh
