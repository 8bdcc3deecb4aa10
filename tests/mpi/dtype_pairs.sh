#!/bin/sh
# Datatype pairs of the same type signature (tests/mpi/dtype_pairs.c) on 2 and 4 ranks, three ways:
# without MPIZip; with it (a CPU-only job: the protocol is off); and with the protocol forced on
# and compression forced on every message (host compression, no size threshold), checking through
# MPIZip's statistics that the large messages of float types really were compressed and that every
# message took the protocol (the integer and byte types as raw bytes); with small messages bare (the default MPIZIP_BARE_BYTES),
# checking that every message went bare or through the protocol; then once more with every rank its
# own node and the progress thread on (float types only).
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/dtype_pairs"
for np in 2 4; do
  run_mpi plain "$np" "$prog" || fail "plain, $np ranks"
  run_mpi mpizip "$np" "$prog" || fail "MPIZip, $np ranks"
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_BARE_BYTES=0 MPIZIP_STATS=1 DTYPE_PAIRS_EXPECT_COMPRESSED=1 DTYPE_PAIRS_EXPECT_ALL_TYPES=1" \
    run_mpi mpizip "$np" "$prog" || fail "MPIZip with the protocol and compression forced, $np ranks"
  # As a GPU job runs: every datatype, the small messages bare (MPI's own, with the datatypes of
  # both sides), the others through the protocol; every message one or the other.
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1 DTYPE_PAIRS_EXPECT_COMPRESSED=1 DTYPE_PAIRS_EXPECT_BARE=1" \
    run_mpi mpizip "$np" "$prog" || fail "MPIZip with small messages bare, $np ranks"
done
# Every rank its own node (the transports' inter-node paths), with the progress thread.
MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1 MPIZIP_PROGRESS_THREAD=on MPIZIP_STATS=1 DTYPE_PAIRS_EXPECT_COMPRESSED=1" \
  run_mpi mpizip 2 "$prog" || fail "MPIZip forced, every rank its own node"
