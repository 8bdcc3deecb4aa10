#!/bin/sh
# MPIZIP_STATS=1 prints, at MPI_Finalize, one summary line per communicator on every rank, with the
# exact call and byte counts of the smoke program (2 ranks).
. "$(dirname "$0")/lib.sh"
out=$(MPIZIP_TEST_ENV="MPIZIP_STATS=1" run_mpi mpizip 2 "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) ||
  fail "smoke with MPIZIP_STATS=1 failed: $out"
echo "$out"
for r in 0 1; do
  world=$(echo "$out" | grep "^\[mpizip $r\] stats: comm 0 MPI_COMM_WORLD, 2 ranks:") ||
    fail "no MPI_COMM_WORLD stats line for rank $r"
  # smoke.c sends one MPI_Send of 1000 doubles and one MPI_Ssend of 1 double per point_to_point().
  echo "$world" | grep -q "MPI_Send calls=1 bytes=8000;" || fail "MPI_Send count on rank $r"
  echo "$world" | grep -q "MPI_Ssend calls=1 bytes=8;" || fail "MPI_Ssend count on rank $r"
  echo "$world" | grep -q "MPI_Allreduce calls=2 bytes=4004;" || fail "MPI_Allreduce count on rank $r"
  echo "$out" | grep -q "^\[mpizip $r\] stats: comm [0-9]* 'smoke-dup' (dup of comm 0), 2 ranks, freed:" ||
    fail "named, freed duplicate missing on rank $r"
done
# Without the variable nothing is printed.
out=$(run_mpi mpizip 2 "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "smoke failed"
if echo "$out" | grep -q "stats:"; then fail "stats printed without MPIZIP_STATS"; fi
exit 0
