# MPIZIP_HIP: --with-hip[=DIR] builds the kernels with hipcc for AMD GPUs (default: no).
# CUDA takes precedence when both are found; a build has one GPU backend.
AC_DEFUN([MPIZIP_HIP], [
  AC_ARG_WITH([hip], [AS_HELP_STRING([--with-hip@<:@=DIR@:>@], [build the kernels with HIP for AMD GPUs])],
              [], [with_hip=no])
  AC_ARG_VAR([HIPCC], [HIP compiler])
  AC_ARG_VAR([HIP_ARCH_FLAGS], [hipcc target flags (default: --offload-arch=gfx90a)])
  mpizip_have_hip=no
  AS_IF([test "x$with_hip" != xno], [
    AS_IF([test "x$mpizip_have_cuda" = xyes], [AC_MSG_ERROR([--with-hip and CUDA together: pass --without-cuda])])
    AS_IF([test "x$with_hip" != xyes], [: ${HIPCC:=$with_hip/bin/hipcc}], [AC_PATH_PROG([HIPCC], [hipcc])])
    AS_IF([test -n "$HIPCC" && test -x "$HIPCC"], [mpizip_have_hip=yes],
          [AC_MSG_ERROR([--with-hip given but hipcc not found])])
    HIP_LIBS="-lamdhip64"
    AC_DEFINE([MPIZIP_HAVE_HIP], [1], [HIP support])
  ])
  : ${HIP_ARCH_FLAGS:="--offload-arch=gfx90a"}
  AC_SUBST([HIP_LIBS])
  AM_CONDITIONAL([HAVE_HIP], [test "x$mpizip_have_hip" = xyes])
  AM_CONDITIONAL([HAVE_GPU], [test "x$mpizip_have_cuda" = xyes || test "x$mpizip_have_hip" = xyes])
])
