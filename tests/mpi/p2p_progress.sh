#!/bin/sh
# MPI's progress rule through MPIZip (tests/mpi/p2p_progress.c) on 2 and 4 ranks: without MPIZip,
# with it, with compression forced, and with compression forced and no progress thread, each
# under a time limit (a broken rule deadlocks).
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/p2p_progress"
for np in 2 4; do
  timeout 120 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi plain "$@"' run "$np" "$prog" ||
    fail "plain, $np ranks"
  timeout 120 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' run "$np" "$prog" ||
    fail "MPIZip, $np ranks"
  for env in "MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0" \
             "MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_PROGRESS_THREAD=off" \
             "MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_PROGRESS_THREAD=on"; do
    MPIZIP_TEST_ENV="$env" timeout 120 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
      run "$np" "$prog" || fail "MPIZip with $env, $np ranks"
  done
done
