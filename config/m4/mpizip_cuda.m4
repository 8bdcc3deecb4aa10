# MPIZIP_CUDA: --with-cuda[=DIR] (default: auto-detect /usr/local/cuda or nvcc on PATH).
# Sets NVCC, CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, NVCC_ARCH_FLAGS and the HAVE_CUDA conditional.
# The library links only the CUDA runtime (libcudart), never the driver library (libcuda), so it
# loads on machines without a GPU driver and reports "no GPU" there.
AC_DEFUN([MPIZIP_CUDA], [
  AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [build the CUDA kernels (default: auto-detect)])],
              [], [with_cuda=check])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCC_ARCH_FLAGS], [nvcc target flags (default: -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90)])
  mpizip_have_cuda=no
  AS_IF([test "x$with_cuda" != xno], [
    mpizip_cuda_dir=
    AS_IF([test "x$with_cuda" != xyes && test "x$with_cuda" != xcheck], [mpizip_cuda_dir="$with_cuda"],
          [test -x /usr/local/cuda/bin/nvcc], [mpizip_cuda_dir=/usr/local/cuda])
    AS_IF([test -n "$mpizip_cuda_dir"], [: ${NVCC:=$mpizip_cuda_dir/bin/nvcc}], [AC_PATH_PROG([NVCC], [nvcc])])
    AS_IF([test -n "$NVCC" && test -x "$NVCC"], [
      AS_IF([test -z "$mpizip_cuda_dir"], [mpizip_cuda_dir=`dirname \`dirname $NVCC\``])
      CUDA_CPPFLAGS="-I$mpizip_cuda_dir/include"
      mpizip_cuda_libdir="$mpizip_cuda_dir/lib64"
      AS_IF([test -d "$mpizip_cuda_dir/targets/x86_64-linux/lib"], [mpizip_cuda_libdir="$mpizip_cuda_dir/targets/x86_64-linux/lib"])
      CUDA_LDFLAGS="-L$mpizip_cuda_libdir -Wl,-rpath,$mpizip_cuda_libdir"
      CUDA_LIBS="-lcudart"
      mpizip_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
      AC_CHECK_HEADER([cuda_runtime.h], [mpizip_have_cuda=yes], [mpizip_have_cuda=no])
      CPPFLAGS="$mpizip_save_CPPFLAGS"
    ])
    AS_IF([test "x$with_cuda" != xcheck && test "x$mpizip_have_cuda" != xyes],
          [AC_MSG_ERROR([--with-cuda given but nvcc or cuda_runtime.h not found])])
  ])
  # An nvcc without the runtime's headers (a partial toolkit) builds without CUDA: nothing of it is linked.
  AS_IF([test "x$mpizip_have_cuda" != xyes], [CUDA_CPPFLAGS= CUDA_LDFLAGS= CUDA_LIBS=])
  : ${NVCC_ARCH_FLAGS:="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"}
  AS_IF([test "x$mpizip_have_cuda" = xyes], [AC_DEFINE([MPIZIP_HAVE_CUDA], [1], [CUDA support])])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$mpizip_have_cuda" = xyes])
])
