#!/bin/sh
# MPI point-to-point semantics (tests/mpi/p2p_semantics.c) on 2, 3 and 4 ranks, three ways: without
# MPIZip; with it (a CPU-only job: the protocol is off); with the protocol on and compression forced
# on every message (host compression, no size threshold, no bare messages); and with every datatype
# taking the protocol and small messages bare, as in a GPU job. Messages go up to 16 MiB and a byte
# on 2 ranks (4 MB on 3 and 4); with compression forced on 2 ranks, up to 256 MiB: the one run whose
# largest messages take a path of their own (many chunks, each compressed), where in the others
# they would be the MPI library's own transfer again, or that run's chunking.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/p2p_semantics"
for np in 2 3 4; do
  max=$([ "$np" = 2 ] && echo 16777217 || echo 4000000)
  forced_max=$([ "$np" = 2 ] && echo 268435456 || echo 4000000)
  run_mpi plain "$np" "$prog" "$max" || fail "plain, $np ranks"
  run_mpi mpizip "$np" "$prog" "$max" || fail "MPIZip, $np ranks"
  # Every message through the protocol, the smallest ones too (no bare messages).
  MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_BARE_BYTES=0" \
    run_mpi mpizip "$np" "$prog" "$forced_max" || fail "MPIZip with compression forced, $np ranks"
  # Every datatype through the protocol (what a job whose ranks all have GPUs does), the integer,
  # byte and mixed-struct messages as raw bytes, and the small ones of every datatype bare (the
  # default MPIZIP_BARE_BYTES): the statistics must show both were taken.
  out=$(MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1" \
        run_mpi mpizip "$np" "$prog" "$max" 2>&1) || { echo "$out" | tail -20; fail "every datatype, $np ranks"; }
  echo "$out" | grep -q "protocol: sent bytes messages=[1-9]" ||
    fail "every datatype, $np ranks: no message of another signature took the protocol"
  echo "$out" | grep -q "bare sent=[1-9][0-9]* received=[1-9]" ||
    fail "every datatype, $np ranks: no message travelled bare"
done
