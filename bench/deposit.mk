# bench: the Hamlyn deposit benchmark (latency against message size, bandwidth
# against packet size; cross-memory and fallback paths). Not run by make check.
noinst_PROGRAMS += bench/deposit_bench
bench_deposit_bench_SOURCES = bench/deposit_bench.cpp
bench_deposit_bench_LDADD = src/libhpam_core.la
