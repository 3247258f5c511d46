# bench/apps: Split-C style applications on src/splitc, each verifying its
# own result; run small by tests/splitc/<app>.sh (make check; the matrix of
# transports in tests/splitc/app_matrix.sh) and at size by bench/run.
APP_CFLAGS = $(AM_CFLAGS) $(OMPI_CPPFLAGS)
APP_LDADD = src/splitc/libhpam_splitc.la $(MPI_LIBS)
APP_COMMON_H = bench/apps/app_common.h
noinst_PROGRAMS += bench/apps/radix_sort
bench_apps_radix_sort_SOURCES = bench/apps/radix_sort.c bench/apps/sort_check.h $(APP_COMMON_H)
bench_apps_radix_sort_CFLAGS = $(APP_CFLAGS)
bench_apps_radix_sort_LDADD = $(APP_LDADD)
noinst_PROGRAMS += bench/apps/sample_sort
bench_apps_sample_sort_SOURCES = bench/apps/sample_sort.c bench/apps/sort_check.h $(APP_COMMON_H)
bench_apps_sample_sort_CFLAGS = $(APP_CFLAGS)
bench_apps_sample_sort_LDADD = $(APP_LDADD)
noinst_PROGRAMS += bench/apps/em3d
bench_apps_em3d_SOURCES = bench/apps/em3d.c $(APP_COMMON_H)
bench_apps_em3d_CFLAGS = $(APP_CFLAGS)
bench_apps_em3d_LDADD = $(APP_LDADD)
noinst_PROGRAMS += bench/apps/matmul
bench_apps_matmul_SOURCES = bench/apps/matmul.c $(APP_COMMON_H)
bench_apps_matmul_CFLAGS = $(APP_CFLAGS)
bench_apps_matmul_LDADD = $(APP_LDADD)
noinst_PROGRAMS += bench/apps/components
bench_apps_components_SOURCES = bench/apps/components.c $(APP_COMMON_H)
bench_apps_components_CFLAGS = $(APP_CFLAGS)
bench_apps_components_LDADD = $(APP_LDADD)
# bench/run sources bench/apps.sh; bench/report/apps.py writes their sections.
dist_noinst_SCRIPTS += bench/apps.sh bench/profile_app.sh
EXTRA_DIST += bench/apps_plots.gp
