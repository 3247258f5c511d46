# bench: MPI ping-pong over any BTL, and the script that compares hpam with vader.
noinst_PROGRAMS += bench/mpi_pingpong
bench_mpi_pingpong_SOURCES = bench/mpi_pingpong.c
bench_mpi_pingpong_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS)
bench_mpi_pingpong_LDADD = $(MPI_LIBS)
dist_noinst_SCRIPTS += bench/mpi_compare.sh

noinst_PROGRAMS += bench/mpi_rma_lat bench/mpi_msgrate
bench_mpi_rma_lat_SOURCES = bench/mpi_rma_lat.c
bench_mpi_rma_lat_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS)
bench_mpi_rma_lat_LDADD = $(MPI_LIBS)
bench_mpi_msgrate_SOURCES = bench/mpi_msgrate.c bench/hpam_pvars.h
bench_mpi_msgrate_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS) -I$(top_srcdir)/tests/mpi
bench_mpi_msgrate_LDADD = $(MPI_LIBS)
noinst_PROGRAMS += bench/mpi_flood
bench_mpi_flood_SOURCES = bench/mpi_flood.c bench/hpam_pvars.h
bench_mpi_flood_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS) -I$(top_srcdir)/tests/mpi
bench_mpi_flood_LDADD = $(MPI_LIBS)
dist_noinst_SCRIPTS += bench/loss.sh
EXTRA_DIST += bench/loss_plots.gp
noinst_PROGRAMS += bench/mpi_logp
bench_mpi_logp_SOURCES = bench/mpi_logp.c
bench_mpi_logp_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS)
bench_mpi_logp_LDADD = $(MPI_LIBS)
noinst_PROGRAMS += bench/mpi_coll
bench_mpi_coll_SOURCES = bench/mpi_coll.c bench/hpam_pvars.h
bench_mpi_coll_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS) -I$(top_srcdir)/tests/mpi
bench_mpi_coll_LDADD = $(MPI_LIBS)
