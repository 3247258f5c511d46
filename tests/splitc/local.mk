# tests/splitc: the Split-C library call by call, and every application of
# bench/apps at small size over vader, hpam (both NIC models, with and
# without faults) at 2 and 4 ranks.
check_PROGRAMS += tests/splitc/splitc_api
tests_splitc_splitc_api_SOURCES = tests/splitc/splitc_api.c
tests_splitc_splitc_api_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS)
tests_splitc_splitc_api_LDADD = src/splitc/libhpam_splitc.la $(MPI_LIBS)
dist_noinst_SCRIPTS += tests/splitc/app_matrix.sh tests/common/expect.sh
TESTS += tests/splitc/splitc_api.sh tests/splitc/radix_sort.sh tests/splitc/sample_sort.sh \
  tests/splitc/em3d.sh tests/splitc/matmul.sh tests/splitc/components.sh
# A hostile storer's records in store coalescing: built from the library's
# sources (its C++ runtime is not exported), so that processor 1 can forge
# records through the library's own delivery.
check_PROGRAMS += tests/splitc/forged_records
tests_splitc_forged_records_SOURCES = tests/splitc/forged_records.cc \
  src/splitc/runtime.cpp src/splitc/heap.cpp src/splitc/spread.cpp src/splitc/access.cpp \
  src/splitc/store.cpp src/splitc/coalesce.cpp src/splitc/collective.cpp
tests_splitc_forged_records_CPPFLAGS = $(AM_CPPFLAGS) $(OMPI_CPPFLAGS) -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1
tests_splitc_forged_records_LDADD = $(MPI_LIBS)
TESTS += tests/splitc/forged_records.sh
