# MPIZIP_MPI: use $MPICC/$MPICXX (default mpicc/mpicxx) as the C and C++ compilers.
AC_DEFUN([MPIZIP_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc)])
  AC_ARG_VAR([MPICXX], [MPI C++ compiler wrapper (default: mpicxx)])
  AC_ARG_VAR([MPIRUN], [MPI launcher used by the tests and mpizip-run (default: mpirun)])
  : ${MPICC:=mpicc}
  : ${MPICXX:=mpicxx}
  : ${MPIRUN:=mpirun}
  AC_CHECK_PROG([mpizip_mpicxx_found], [$MPICXX], [yes], [no])
  AS_IF([test "x$mpizip_mpicxx_found" != xyes],
        [AC_MSG_ERROR([MPI C++ compiler '$MPICXX' not found: install Open MPI or MPICH, or set MPICXX])])
  CC="$MPICC"
  CXX="$MPICXX"
  AC_MSG_CHECKING([which MPI])
  AS_IF([$MPIRUN --version 2>&1 | grep -q "Open MPI"], [mpizip_mpi_flavor=openmpi],
        [$MPIRUN --version 2>&1 | grep -qi "HYDRA\|mpich"], [mpizip_mpi_flavor=mpich],
        [mpizip_mpi_flavor=unknown])
  AC_MSG_RESULT([$mpizip_mpi_flavor])
  AC_SUBST([mpizip_mpi_flavor])
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
