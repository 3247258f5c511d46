# tests: one GoogleTest binary per layer (tests/<layer>/local.mk), MPI
# programs under mpirun (tests/mpi). Shared helpers for forked multi-process
# tests live here.
TEST_CXXFLAGS = $(AM_CXXFLAGS)
TEST_LDADD = src/libhpam_core.la $(GTEST_LIBS)
# The include rules of CONVENTIONS.md (layers may include only downwards).
TESTS += tests/layering.sh
dist_noinst_SCRIPTS += tests/layering.sh
# Soak: all-to-all point-to-point and RMA under every fault for a while
# (tests/soak.sh --minutes N for a long run); uses tests/mpi/mpi_soak.
TESTS += tests/soak.sh
dist_noinst_SCRIPTS += tests/soak.sh
# Formatting (clang-format 14, skipped without it): the C++ sources against
# the root .clang-format, btl/ and uct/ against their own; the drift left to
# the files' owners is listed in tests/format_pending and only reported.
TESTS += tests/format.sh
EXTRA_DIST += tests/format_pending btl/.clang-format uct/.clang-format
# README's layout block names every top-level directory and every src/ one.
TESTS += tests/readme_layout.sh
