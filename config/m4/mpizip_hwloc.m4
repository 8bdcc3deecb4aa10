# MPIZIP_HWLOC: --with-hwloc[=DIR] (default: auto-detect).
AC_DEFUN([MPIZIP_HWLOC], [
  AC_ARG_WITH([hwloc], [AS_HELP_STRING([--with-hwloc@<:@=DIR@:>@], [use hwloc for placement (default: auto-detect)])],
              [], [with_hwloc=check])
  mpizip_have_hwloc=no
  AS_IF([test "x$with_hwloc" != xno], [
    AS_IF([test "x$with_hwloc" != xyes && test "x$with_hwloc" != xcheck],
          [HWLOC_CPPFLAGS="-I$with_hwloc/include"; HWLOC_LDFLAGS="-L$with_hwloc/lib -Wl,-rpath,$with_hwloc/lib"])
    mpizip_save_CPPFLAGS="$CPPFLAGS"; mpizip_save_LDFLAGS="$LDFLAGS"
    CPPFLAGS="$CPPFLAGS $HWLOC_CPPFLAGS"; LDFLAGS="$LDFLAGS $HWLOC_LDFLAGS"
    AC_CHECK_HEADER([hwloc.h],
      [AC_CHECK_LIB([hwloc], [hwloc_topology_init], [mpizip_have_hwloc=yes; HWLOC_LIBS="-lhwloc"])])
    CPPFLAGS="$mpizip_save_CPPFLAGS"; LDFLAGS="$mpizip_save_LDFLAGS"
    AS_IF([test "x$with_hwloc" != xcheck && test "x$mpizip_have_hwloc" != xyes],
          [AC_MSG_ERROR([--with-hwloc given but hwloc.h or libhwloc not found])])
  ])
  AS_IF([test "x$mpizip_have_hwloc" = xyes], [AC_DEFINE([MPIZIP_HAVE_HWLOC], [1], [hwloc support])])
  AC_SUBST([HWLOC_CPPFLAGS])
  AC_SUBST([HWLOC_LDFLAGS])
  AC_SUBST([HWLOC_LIBS])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$mpizip_have_hwloc" = xyes])
])
