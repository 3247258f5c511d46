# tests/mpi: real MPI programs under mpirun over btl/hpam, results checked.
MPI_TEST_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS) -Wno-unused-function
check_PROGRAMS += tests/mpi/mpi_p2p tests/mpi/mpi_coll tests/mpi/mpi_rma tests/mpi/mpi_pvars tests/mpi/mpi_kill \
  tests/mpi/mpi_threads tests/mpi/mpi_dtypes tests/mpi/mpi_overload tests/mpi/mpi_windows tests/mpi/mpi_soak \
  tests/mpi/mpi_silent_sender
tests_mpi_mpi_p2p_SOURCES = tests/mpi/mpi_p2p.c tests/mpi/mpi_check.h
tests_mpi_mpi_p2p_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_p2p_LDADD = $(MPI_LIBS)
tests_mpi_mpi_coll_SOURCES = tests/mpi/mpi_coll.c tests/mpi/mpi_check.h
tests_mpi_mpi_coll_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_coll_LDADD = $(MPI_LIBS)
tests_mpi_mpi_rma_SOURCES = tests/mpi/mpi_rma.c tests/mpi/mpi_check.h
tests_mpi_mpi_rma_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_rma_LDADD = $(MPI_LIBS)
tests_mpi_mpi_pvars_SOURCES = tests/mpi/mpi_pvars.c tests/mpi/mpi_check.h
tests_mpi_mpi_pvars_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_pvars_LDADD = $(MPI_LIBS)
tests_mpi_mpi_kill_SOURCES = tests/mpi/mpi_kill.c tests/mpi/mpi_check.h
tests_mpi_mpi_kill_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_kill_LDADD = $(MPI_LIBS)
tests_mpi_mpi_threads_SOURCES = tests/mpi/mpi_threads.c tests/mpi/mpi_check.h
tests_mpi_mpi_threads_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_threads_LDADD = $(MPI_LIBS) -lpthread
tests_mpi_mpi_dtypes_SOURCES = tests/mpi/mpi_dtypes.c tests/mpi/mpi_check.h
tests_mpi_mpi_dtypes_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_dtypes_LDADD = $(MPI_LIBS)
tests_mpi_mpi_overload_SOURCES = tests/mpi/mpi_overload.c tests/mpi/mpi_check.h
tests_mpi_mpi_overload_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_overload_LDADD = $(MPI_LIBS)
tests_mpi_mpi_windows_SOURCES = tests/mpi/mpi_windows.c tests/mpi/mpi_check.h
tests_mpi_mpi_windows_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_windows_LDADD = $(MPI_LIBS)
tests_mpi_mpi_soak_SOURCES = tests/mpi/mpi_soak.c tests/mpi/mpi_check.h
tests_mpi_mpi_soak_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_soak_LDADD = $(MPI_LIBS)
tests_mpi_mpi_silent_sender_SOURCES = tests/mpi/mpi_silent_sender.c tests/mpi/mpi_check.h
tests_mpi_mpi_silent_sender_CFLAGS = $(MPI_TEST_CFLAGS)
tests_mpi_mpi_silent_sender_LDADD = $(MPI_LIBS)
dist_noinst_SCRIPTS += tests/mpi/common.sh tests/mpi/windows_churn.sh
TESTS += tests/mpi/p2p.sh tests/mpi/coll.sh tests/mpi/rma.sh tests/mpi/pvars.sh \
  tests/mpi/badparam.sh tests/mpi/kill.sh tests/mpi/threads.sh tests/mpi/dtypes.sh tests/mpi/dtypes_faults.sh tests/mpi/overload.sh tests/mpi/windows.sh \
  tests/mpi/windows_churn_medusa.sh tests/mpi/windows_churn_hamlyn.sh tests/mpi/silent_sender.sh
