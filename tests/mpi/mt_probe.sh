#!/bin/sh
# Matched probes from 4 threads per rank and pending derived-datatype receives from several
# senders (tests/mpi/mt_probe.c), on 2 and 4 ranks: without MPIZip, with it, and with the protocol
# and compression forced, with and without the progress thread.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/mt_probe"
for np in 2 4; do
  run_mpi plain "$np" "$prog" || fail "plain, $np ranks"
  run_mpi mpizip "$np" "$prog" || fail "MPIZip, $np ranks"
  for mode in "MPIZIP_PROGRESS_THREAD=off" "MPIZIP_PROGRESS_THREAD=on"; do
    MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 $mode" \
      run_mpi mpizip "$np" "$prog" || fail "MPIZip with the protocol forced ($mode), $np ranks"
  done
done
