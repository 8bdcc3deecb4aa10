#!/bin/sh
# Device buffers with a CUDA-aware MPI beneath (tests/gpu/cuda_aware_device.c, 2 ranks sharing a
# GPU): with the stand-in library (tests/mpi/cuda_aware_standin.c) preloaded after libmpizip,
# every MPI_INT / MPI_BYTE device buffer reaches it untouched; with MPIZIP_MPI_CUDA_AWARE=off,
# MPIZip stages every one (none reaches it). Bit-exact both ways. Skipped (77) without a GPU.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/cuda_aware_device"
standin="$MPIZIP_BUILDDIR/tests/mpi/.libs/libcuda_aware_standin.so"
"$prog" none >/dev/null 2>&1
[ $? = 77 ] && exit 77
run_mpi_preload "$MPIZIP_LIB:$standin" 2 "$prog" all || fail "device pointers did not reach the library unstaged"
MPIZIP_TEST_ENV="MPIZIP_MPI_CUDA_AWARE=off" run_mpi_preload "$MPIZIP_LIB:$standin" 2 "$prog" none ||
  fail "MPIZIP_MPI_CUDA_AWARE=off: device buffers were not staged"
