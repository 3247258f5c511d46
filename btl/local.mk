# btl: the Open MPI component mca_btl_hpam.so, installed where Open MPI
# finds its components (configure: --with-ompi-component-dir).
ompicomponent_LTLIBRARIES = btl/mca_btl_hpam.la
btl_mca_btl_hpam_la_SOURCES = \
  btl/btl_hpam.h \
  btl/btl_hpam_component.c \
  btl/btl_hpam_params.c \
  btl/btl_hpam_param_info.h \
  btl/btl_hpam_param_info.c \
  btl/btl_hpam_module.c \
  btl/btl_hpam_frag.c \
  btl/btl_hpam_send.c \
  btl/btl_hpam_error.c \
  btl/btl_hpam_order.c \
  btl/btl_hpam_rdma.c \
  btl/btl_hpam_mpit.c
# The core is C++: link with the C++ driver.
nodist_EXTRA_btl_mca_btl_hpam_la_SOURCES = btl/link_as_cxx.cpp
btl_mca_btl_hpam_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/capi $(OMPI_CPPFLAGS)
btl_mca_btl_hpam_la_CFLAGS = $(AM_CFLAGS) -Wno-sign-compare -Wno-missing-field-initializers
btl_mca_btl_hpam_la_LDFLAGS = -module -avoid-version -shared \
  -Wl,--version-script=$(srcdir)/btl/mca_btl_hpam.map $(AM_LDFLAGS)
EXTRA_btl_mca_btl_hpam_la_DEPENDENCIES = btl/mca_btl_hpam.map
EXTRA_DIST += btl/mca_btl_hpam.map
btl_mca_btl_hpam_la_LIBADD = src/libhpam_core.la $(OMPI_PAL_LIBS)

# Tests point Open MPI at this directory: it holds only the component, so
# Open MPI does not trip over libtool's object files in .libs.
all-local: btl/component/mca_btl_hpam.so
btl/component/mca_btl_hpam.so: btl/mca_btl_hpam.la
	@mkdir -p btl/component && ln -sf ../.libs/mca_btl_hpam.so $@
CLEANFILES += btl/component/mca_btl_hpam.so

# The README's table of these parameters, printed from their one description
# (tests/btl/readme_params.sh compares README.md with it; make
# update-readme-params rewrites README.md's table).
noinst_PROGRAMS += btl/btl_hpam_param_table
btl_btl_hpam_param_table_SOURCES = btl/btl_hpam_param_table.c btl/btl_hpam_param_info.c \
  btl/btl_hpam_param_info.h
nodist_EXTRA_btl_btl_hpam_param_table_SOURCES = btl/link_as_cxx.cpp
btl_btl_hpam_param_table_LDADD = src/libhpam_core.la
btl_btl_hpam_param_table_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/capi
update-readme-params: btl/btl_hpam_param_table
	HPAM_SRCDIR=$(abs_top_srcdir) HPAM_BUILDDIR=$(abs_top_builddir) bash $(srcdir)/tests/btl/readme_params.sh --update
.PHONY: update-readme-params
