# bench: the native active-message benchmark (no MPI).
noinst_PROGRAMS += bench/am_bench
bench_am_bench_SOURCES = bench/am_bench.cpp
bench_am_bench_LDADD = src/libhpam_core.la
