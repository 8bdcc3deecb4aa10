# MPIZIP_UCX: --with-ucx[=DIR] (default: auto-detect through pkg-config or the default paths).
AC_DEFUN([MPIZIP_UCX], [
  AC_ARG_WITH([ucx], [AS_HELP_STRING([--with-ucx@<:@=DIR@:>@], [use UCX (ucp) for inter-node transfers (default: auto-detect)])],
              [], [with_ucx=check])
  mpizip_have_ucx=no
  AS_IF([test "x$with_ucx" != xno], [
    AS_IF([test "x$with_ucx" != xyes && test "x$with_ucx" != xcheck],
          [UCX_CPPFLAGS="-I$with_ucx/include"; UCX_LDFLAGS="-L$with_ucx/lib -Wl,-rpath,$with_ucx/lib"])
    mpizip_save_CPPFLAGS="$CPPFLAGS"; mpizip_save_LDFLAGS="$LDFLAGS"
    CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"; LDFLAGS="$LDFLAGS $UCX_LDFLAGS"
    AC_CHECK_HEADER([ucp/api/ucp.h],
      [AC_CHECK_LIB([ucp], [ucp_init_version], [mpizip_have_ucx=yes; UCX_LIBS="-lucp -lucs"])])
    CPPFLAGS="$mpizip_save_CPPFLAGS"; LDFLAGS="$mpizip_save_LDFLAGS"
    AS_IF([test "x$with_ucx" != xcheck && test "x$mpizip_have_ucx" != xyes],
          [AC_MSG_ERROR([--with-ucx given but ucp/api/ucp.h or libucp not found])])
  ])
  AS_IF([test "x$mpizip_have_ucx" = xyes], [AC_DEFINE([MPIZIP_HAVE_UCX], [1], [UCX support])])
  AC_SUBST([UCX_CPPFLAGS])
  AC_SUBST([UCX_LDFLAGS])
  AC_SUBST([UCX_LIBS])
  AM_CONDITIONAL([HAVE_UCX], [test "x$mpizip_have_ucx" = xyes])
])
