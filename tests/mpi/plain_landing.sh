#!/bin/sh
# Receives into host buffers larger than the bare size (tests/mpi/plain_landing.c) on 2 ranks:
# without MPIZip; with it and the protocol on (as in a GPU job), statistics on, where a plain
# message must be the MPI library's own receive and request and a match message must go on from
# it, through every completion call; and so once more with the helper thread off.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/plain_landing"
run_mpi plain 2 "$prog" || fail "plain"
for extra in "" "MPIZIP_PROGRESS_THREAD=off"; do
  out=$(MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_STATS=1 $extra" run_mpi mpizip 2 "$prog" 2>&1) ||
    { echo "$out" | grep -v "stats:" | tail -30; fail "MPIZip, protocol on $extra"; }
  echo "$out" | grep "^plain_landing:"
done
