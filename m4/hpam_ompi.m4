# HPAM_CHECK_OMPI: the installed Open MPI's devel headers (opal/mca/btl/btl.h),
# libopen-pal, mpirun, and the directory where Open MPI looks for components.
AC_DEFUN([HPAM_CHECK_OMPI], [
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
      [where to install mca_btl_hpam.so (default: Open MPI's own component
       directory when writable, else $HOME/.openmpi/components)])],
    [ompicomponentdir=$withval], [ompicomponentdir=])
  AC_PATH_PROG([MPICC], [mpicc], [no])
  AS_IF([test "x$MPICC" = xno],
        [AC_MSG_ERROR([mpicc not found: apt-get install libopenmpi-dev openmpi-bin])])
  AC_PATH_PROG([MPIRUN], [mpirun], [no])
  AC_PATH_PROG([MPICXX], [mpicxx], [no])
  OMPI_INCDIRS=`$MPICC --showme:incdirs`
  OMPI_LIBDIR=`$MPICC --showme:libdirs | cut -d' ' -f1`
  OMPI_INCDIR=
  for d in $OMPI_INCDIRS; do
    AS_IF([test -f "$d/opal/mca/btl/btl.h"], [OMPI_INCDIR=$d])
  done
  AS_IF([test -z "$OMPI_INCDIR"],
        [AC_MSG_ERROR([opal/mca/btl/btl.h not found under: $OMPI_INCDIRS])])
  OMPI_CPPFLAGS=
  for d in $OMPI_INCDIRS; do OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"; done
  OMPI_PAL_LIBS="-L$OMPI_LIBDIR -lopen-pal"
  MPI_LIBS=`$MPICC --showme:link`
  AS_IF([test -z "$ompicomponentdir"], [
    ompi_sysdir=`ls -d $OMPI_LIBDIR/openmpi3 $OMPI_LIBDIR/openmpi 2>/dev/null | head -n1`
    AS_IF([test -n "$ompi_sysdir" && test -w "$ompi_sysdir"],
          [ompicomponentdir=$ompi_sysdir],
          [ompicomponentdir=$HOME/.openmpi/components])
  ])
  OMPI_SYSTEM_COMPONENT_DIR=`ls -d $OMPI_LIBDIR/openmpi3 $OMPI_LIBDIR/openmpi 2>/dev/null | head -n1`
  dnl What hpam-splitc.pc requires for MPI: Open MPI's own pkg-config module.
  HPAM_MPI_PC=
  for m in ompi-c mpi-c; do
    AS_IF([test -z "$HPAM_MPI_PC" && $PKG_CONFIG --exists $m], [HPAM_MPI_PC=$m])
  done
  AS_IF([test -z "$HPAM_MPI_PC"],
        [AC_MSG_WARN([no pkg-config module for MPI (ompi-c): hpam-splitc.pc will not name MPI's flags])])
  AC_SUBST([HPAM_MPI_PC])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_INCDIR])
  AC_SUBST([OMPI_PAL_LIBS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([OMPI_SYSTEM_COMPONENT_DIR])
  AC_SUBST([ompicomponentdir])
])
