# bench: the native active-message benchmark (no MPI).
noinst_PROGRAMS += bench/am_bench
bench_am_bench_SOURCES = bench/am_bench.cpp
bench_am_bench_LDADD = src/libhpam_core.la

noinst_PROGRAMS += bench/am_cost
bench_am_cost_SOURCES = bench/am_cost.cpp
bench_am_cost_LDADD = src/libhpam_core.la
