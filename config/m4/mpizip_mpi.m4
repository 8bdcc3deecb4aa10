# MPIZIP_MPI: the MPI library to build against, through its compiler wrappers, which become CC and
# CXX. --with-mpi=openmpi or --with-mpi=mpich takes Debian's wrappers and launcher of that library
# (mpicc.openmpi, mpicxx.openmpi, mpirun.openmpi; mpicc.mpich, mpicxx.mpich, mpiexec.mpich);
# without it, MPICC and MPICXX (default mpicc and mpicxx) and MPIRUN (default the library's
# launcher). MPICC, MPICXX and MPIRUN given on the command line win over --with-mpi.
AC_DEFUN([MPIZIP_MPI], [
  AC_ARG_WITH([mpi], [AS_HELP_STRING([--with-mpi=openmpi|mpich],
                      [build against Open MPI or MPICH through Debian's mpicc.LIBRARY, mpicxx.LIBRARY and launcher (default: mpicc and mpicxx as found, or MPICC and MPICXX)])],
              [], [with_mpi=check])
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AC_ARG_VAR([MPICXX], [MPI C++ compiler wrapper (default: mpicxx)])
  AC_ARG_VAR([MPIRUN], [MPI launcher of the tests and mpizip-run (default: the library's mpirun or mpiexec)])
  AS_CASE([$with_mpi],
    [openmpi], [: ${MPICC:=mpicc.openmpi}; : ${MPICXX:=mpicxx.openmpi}],
    [mpich], [: ${MPICC:=mpicc.mpich}; : ${MPICXX:=mpicxx.mpich}],
    [check|yes], [],
    [AC_MSG_ERROR([--with-mpi takes openmpi or mpich, not '$with_mpi' (other MPI libraries: set MPICC, MPICXX and MPIRUN)])])
  : ${MPICC:=mpicc}
  : ${MPICXX:=mpicxx}
  AC_CHECK_PROG([mpizip_mpicxx_found], [$MPICXX], [yes], [no])
  AS_IF([test "x$mpizip_mpicxx_found" != xyes],
        [AC_MSG_ERROR([MPI C++ compiler '$MPICXX' not found: install Open MPI or MPICH (tools/install-deps.sh), or set MPICXX])])
  CC="$MPICC"
  CXX="$MPICXX"
])

# MPIZIP_MPI_LIBRARY (after AC_PROG_CXX): which library the wrappers' mpi.h belongs to, its launcher,
# and how the tests launch ranks with it (tests/mpi/launcher.sh, generated from launcher.sh.in):
#   MPIRUN_TEST_FLAGS  launcher options of every test run
#   MPIRUN_ENV_OPTION  the launcher option that sets NAME=VALUE in every rank
# Open MPI: more ranks than cores (--oversubscribe), root allowed, no single-copy shared memory
# (CMA needs ptrace rights that containers often lack), and no op/avx component (Open MPI 4.1's
# adds 8- and 16-bit unsigned integers with saturation instead of wrapping around,
# open-mpi/ompi#8045, and the tests check reductions bit for bit); -x NAME=VALUE. MPICH's Hydra
# oversubscribes and runs as root as it is; its tests steer MPICH 4.0.2 clear of two of its bugs
# that tests/mpi/collectives meets without MPIZip: its ch4 device reduce crashes on MPI_IN_PLACE at
# a root other than 0 from about 1000 doubles (so the generic reduce instead), and its pairwise
# MPI_Reduce_scatter and MPI_Ireduce_scatter copy between overlapping memory with MPI_IN_PLACE and
# uneven counts (so recursive halving); -genv NAME=VALUE.
AC_DEFUN([MPIZIP_MPI_LIBRARY], [
  AC_ARG_VAR([MPIRUN_TEST_FLAGS], [launcher options of every test run (default: by MPI library)])
  AC_ARG_VAR([MPIRUN_ENV_OPTION], [launcher option that sets NAME=VALUE in every rank (default: -x for Open MPI, -genv for MPICH)])
  AC_MSG_CHECKING([which MPI library $CXX builds against])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#if !defined(OPEN_MPI)
#error not Open MPI
#endif]], [])], [mpizip_mpi_flavor=openmpi],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>
#if !defined(MPICH_VERSION)
#error not MPICH
#endif]], [])], [mpizip_mpi_flavor=mpich], [mpizip_mpi_flavor=unknown])])
  AC_MSG_RESULT([$mpizip_mpi_flavor])
  AS_IF([test "x$with_mpi" != xcheck && test "x$with_mpi" != xyes && test "x$with_mpi" != "x$mpizip_mpi_flavor"],
        [AC_MSG_ERROR([--with-mpi=$with_mpi, but $CXX compiles against $mpizip_mpi_flavor])])
  AS_CASE([$mpizip_mpi_flavor],
    [openmpi], [AC_CHECK_PROGS([MPIRUN], [mpirun.openmpi mpirun])
                mpizip_launcher_want="Open MPI\\|OpenRTE"
                : ${MPIRUN_ENV_OPTION=-x}
                : ${MPIRUN_TEST_FLAGS="--oversubscribe --allow-run-as-root --mca btl_vader_single_copy_mechanism none --mca op ^avx"}],
    [mpich], [AC_CHECK_PROGS([MPIRUN], [mpiexec.mpich mpiexec.hydra mpiexec mpirun])
              mpizip_launcher_want="HYDRA"
              : ${MPIRUN_ENV_OPTION=-genv}
              : ${MPIRUN_TEST_FLAGS="-genv MPIR_CVAR_REDUCE_DEVICE_COLLECTIVE=0 -genv MPIR_CVAR_REDUCE_SCATTER_INTRA_ALGORITHM=recursive_halving -genv MPIR_CVAR_IREDUCE_SCATTER_INTRA_ALGORITHM=sched_recursive_halving"}],
    [AC_MSG_WARN([$CXX is neither Open MPI's nor MPICH's: the tests launch with MPIRUN (default mpirun), MPIRUN_ENV_OPTION (default -genv) and MPIRUN_TEST_FLAGS])
     : ${MPIRUN:=mpirun}
     mpizip_launcher_want=""
     : ${MPIRUN_ENV_OPTION=-genv}])
  AS_IF([test -z "$MPIRUN"], [AC_MSG_ERROR([no launcher of $mpizip_mpi_flavor found: set MPIRUN])])
  dnl A launcher of the other library would start ranks that cannot talk to each other.
  AS_IF([test -n "$mpizip_launcher_want"], [
    AC_MSG_CHECKING([whether $MPIRUN is the $mpizip_mpi_flavor launcher])
    AS_IF([$MPIRUN --version 2>&1 | grep -q "$mpizip_launcher_want"], [AC_MSG_RESULT([yes])],
          [AC_MSG_RESULT([no])
           AC_MSG_ERROR([$MPIRUN is not the launcher of $mpizip_mpi_flavor, which $CXX builds against: set MPIRUN (or use --with-mpi=openmpi|mpich)])])])
  AC_SUBST([mpizip_mpi_flavor])
  AC_SUBST([MPIRUN_TEST_FLAGS])
  AC_SUBST([MPIRUN_ENV_OPTION])
  AM_CONDITIONAL([MPI_OPENMPI], [test "x$mpizip_mpi_flavor" = xopenmpi])
])

# MPIZIP_CXX20: host code is C++20.
AC_DEFUN([MPIZIP_CXX20], [
  AC_MSG_CHECKING([whether $CXX accepts -std=c++20])
  mpizip_save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++20"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <span>
#include <concepts>]], [[std::span<int> s; (void)s;]])],
                    [AC_MSG_RESULT([yes])],
                    [AC_MSG_RESULT([no]); AC_MSG_ERROR([a C++20 compiler is required])])
  CXXFLAGS="$mpizip_save_CXXFLAGS"
  dnl Hidden by default: libmpizip.so exports the MPI_* entry points, the public API of
  dnl include/mpizip.h and the address-space hooks, each marked; everything else is reached
  dnl without the dynamic linker (no PLT call, no GOT load on a small message's path).
  MPIZIP_CXXFLAGS="-std=c++20 -Wall -Wextra -Wno-unused-parameter -fvisibility=hidden"
  AC_SUBST([MPIZIP_CXXFLAGS])
])

# MPIZIP_DEBUG: --enable-debug builds with -O0 -g and assertions.
AC_DEFUN([MPIZIP_DEBUG], [
  AC_ARG_ENABLE([debug], [AS_HELP_STRING([--enable-debug], [build with -O0 -g and internal assertions])],
                [], [enable_debug=no])
  AS_IF([test "x$enable_debug" = xyes],
        [CXXFLAGS="-O0 -g"; CFLAGS="-O0 -g"; AC_DEFINE([MPIZIP_DEBUG_BUILD], [1], [Debug build])],
        [CXXFLAGS="${CXXFLAGS:--O2 -g}"; AC_DEFINE([NDEBUG], [1], [Release build])])
])
