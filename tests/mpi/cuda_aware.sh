#!/bin/sh
# A CUDA-aware MPI beneath MPIZip (src/core/mpi_beneath.h): with a stand-in library that answers
# MPIX_Query_cuda_support() with 1 preloaded after libmpizip (tests/mpi/cuda_aware_standin.c),
# MPIZip finds it and says so, mpizip-info too, and MPIZIP_MPI_CUDA_AWARE=off overrides it; the
# MPI library itself (Open MPI here, not CUDA-aware) is found not to be. The device-buffer half of
# the test, device pointers reaching the library untouched, is tests/gpu/cuda_aware.sh.
. "$(dirname "$0")/lib.sh"
standin="$MPIZIP_BUILDDIR/tests/mpi/.libs/libcuda_aware_standin.so"
[ -f "$standin" ] || fail "$standin is not built"
prog="$MPIZIP_BUILDDIR/tests/mpi/smoke"
out=$(MPIZIP_TEST_ENV="MPIZIP_LOG=info" run_mpi_preload "$MPIZIP_LIB:$standin" 2 "$prog" 2>&1) ||
  fail "the program failed with the stand-in: $out"
echo "$out" | grep -q "MPI library beneath takes device buffers (MPIX_Query_cuda_support() of .*libcuda_aware_standin.so returns 1)" ||
  fail "the stand-in was not found: $out"
out=$(MPIZIP_TEST_ENV="MPIZIP_LOG=info MPIZIP_MPI_CUDA_AWARE=off" run_mpi_preload "$MPIZIP_LIB:$standin" 2 "$prog" 2>&1) ||
  fail "the program failed with MPIZIP_MPI_CUDA_AWARE=off"
echo "$out" | grep -q "MPI library beneath does not take device buffers (MPIZIP_MPI_CUDA_AWARE=off)" ||
  fail "MPIZIP_MPI_CUDA_AWARE=off was not obeyed: $out"
out=$(MPIZIP_TEST_ENV="MPIZIP_LOG=info" run_mpi mpizip 2 "$prog" 2>&1) || fail "the program failed"
if ompi_info --parsable --all 2>/dev/null | grep -q "mpi_built_with_cuda_support:value:false"; then
  echo "$out" | grep -q "MPI library beneath does not take device buffers" ||
    fail "a library without CUDA support was taken for CUDA-aware: $out"
fi
LD_PRELOAD="$MPIZIP_LIB:$standin" "$MPIZIP_BUILDDIR/tools/mpizip-info" | grep -q "MPI beneath  takes device buffers" ||
  fail "mpizip-info does not report the stand-in"
echo "cuda_aware: the stand-in is found, reported and overridden"
