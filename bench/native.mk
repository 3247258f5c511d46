# bench: the native active-message benchmark (no MPI).
noinst_PROGRAMS += bench/am_bench
bench_am_bench_SOURCES = bench/am_bench.cpp bench/line_floor.hpp
bench_am_bench_LDADD = src/libhpam_core.la

noinst_PROGRAMS += bench/am_cost
bench_am_cost_SOURCES = bench/am_cost.cpp
bench_am_cost_LDADD = src/libhpam_core.la

noinst_PROGRAMS += bench/am_logp
bench_am_logp_SOURCES = bench/am_logp.cpp
bench_am_logp_LDADD = src/libhpam_core.la

noinst_PROGRAMS += bench/am_pingpong
bench_am_pingpong_SOURCES = bench/am_pingpong.cpp
bench_am_pingpong_LDADD = src/libhpam_core.la

noinst_PROGRAMS += bench/line_pingpong
bench_line_pingpong_SOURCES = bench/line_pingpong.cpp bench/line_floor.hpp
bench_line_pingpong_LDADD = src/libhpam_core.la

dist_noinst_SCRIPTS += bench/run
EXTRA_DIST += bench/plots.gp bench/hamlyn_lib_plots.gp
bench: all
	$(top_srcdir)/bench/run --build $(abs_top_builddir)
.PHONY: bench

# The Hamlyn library's protocols (OSDI'96 section 4's measurements).
noinst_PROGRAMS += bench/hamlyn_lib_bench
bench_hamlyn_lib_bench_SOURCES = bench/hamlyn_lib_bench.cpp bench/line_floor.hpp
bench_hamlyn_lib_bench_LDADD = src/libhpam_core.la
