#!/bin/sh
# MPI's progress rule through MPIZip (tests/mpi/p2p_progress.c) on 2 and 4 ranks: without MPIZip,
# with it, with compression forced, with and without the helper thread, and over each transport,
# each under a time limit (a broken rule deadlocks).
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
# Every transport a job without a GPU can use, every rank its own node: the MPI library's (above),
# UCX (its worker advanced by MPIZip's helper thread, which never calls MPI) and the emulated link
# (paced). The log names the transport each run took.
for t in ucx emulated; do
  [ "$t" = ucx ] && ! grep -q '^#define MPIZIP_HAVE_UCX 1' "$MPIZIP_BUILDDIR/config.h" && continue
  env="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=$t MPIZIP_EMU_GBPS=4 MPIZIP_LOG=info UCX_TLS=tcp,self,sm"
  out=$(MPIZIP_TEST_ENV="$env" timeout 180 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
      run 2 "$prog" 2>&1) || { echo "$out" | tail -20; fail "MPIZip over $t"; }
  echo "$out" | grep -q "over transport .*$t" || { echo "$out" | grep mpizip | head; fail "$t was not taken"; }
done
