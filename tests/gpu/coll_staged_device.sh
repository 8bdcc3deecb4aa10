#!/bin/sh
# Collectives with device buffers under MPIZip on a non-CUDA-aware MPI (tests/gpu/coll_staged_device.cc:
# every collective, blocking and non-blocking, bit-exact against the same calls on host buffers,
# and MPIX_Query_cuda_support() = 1) on 2, 3 and 4 ranks sharing the GPU; also without the
# progress thread (requests completed from the application's waits and tests alone) and with
# statistics on. Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/coll_staged_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
for run in "2" "3" "4" "3 MPIZIP_PROGRESS_THREAD=off" "2 MPIZIP_STATS=1"; do
  np=${run%% *}
  env=$(echo "$run" | cut -s -d' ' -f2-)
  echo "== $np ranks: ${env:-defaults}"
  MPIZIP_TEST_ENV="$env" timeout 600 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
    run "$np" "$prog" || fail "$np ranks, ${env:-defaults}"
done
