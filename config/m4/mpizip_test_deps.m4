# MPIZIP_TEST_DEPS: GoogleTest (unit tests) and Google Benchmark (CPU codec benchmark), optional.
# Debian's libgtest-dev ships the static library; libbenchmark-dev the shared one. --without-gtest
# leaves the unit tests out (they do not depend on the MPI library: check.sh's second build, against
# MPICH, runs only the tests that launch ranks).
AC_DEFUN([MPIZIP_TEST_DEPS], [
  AC_ARG_WITH([gtest], [AS_HELP_STRING([--without-gtest], [leave out the unit tests (GoogleTest) (default: with them where GoogleTest is found)])],
              [], [with_gtest=check])
  mpizip_have_gtest=no
  mpizip_have_benchmark=no
  AS_IF([test "x$with_gtest" != xno], [
  AC_CHECK_HEADER([gtest/gtest.h], [
    mpizip_save_LIBS="$LIBS"; LIBS="-lgtest -lpthread $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <gtest/gtest.h>]], [[testing::InitGoogleTest();]])],
                   [mpizip_have_gtest=yes; GTEST_LIBS="-lgtest -lpthread"])
    LIBS="$mpizip_save_LIBS"])])
  AC_CHECK_HEADER([benchmark/benchmark.h], [
    mpizip_save_LIBS="$LIBS"; LIBS="-lbenchmark -lpthread $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <benchmark/benchmark.h>]], [[benchmark::Initialize(nullptr, nullptr);]])],
                   [mpizip_have_benchmark=yes; BENCHMARK_LIBS="-lbenchmark -lpthread"])
    LIBS="$mpizip_save_LIBS"])
  AC_SUBST([GTEST_LIBS])
  AC_SUBST([BENCHMARK_LIBS])
  AM_CONDITIONAL([HAVE_GTEST], [test "x$mpizip_have_gtest" = xyes])
  AM_CONDITIONAL([HAVE_BENCHMARK], [test "x$mpizip_have_benchmark" = xyes])
])
