#!/bin/sh
# 100,000 messages on 2 ranks with the protocol on and compression forced: memory stops growing
# after warm-up (and the same run without MPIZip, for comparison).
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/p2p_soak"
run_mpi plain 2 "$prog" 100000 || fail "plain"
MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0" run_mpi mpizip 2 "$prog" 100000 ||
  fail "MPIZip, compression forced: memory grew or data was wrong"
