#!/bin/sh
# A C++ program with MPI_THREAD_MULTIPLE (4 threads per rank, communicator churn) passes with and
# without MPIZip. Exit 77 (skip) when the MPI does not provide MPI_THREAD_MULTIPLE.
. "$(dirname "$0")/lib.sh"
for mode in plain mpizip; do
  out=$(run_mpi "$mode" 2 "$MPIZIP_BUILDDIR/tests/mpi/threads" 2>&1); rc=$?
  echo "$out"
  if echo "$out" | grep -q "MPI_THREAD_MULTIPLE not provided"; then exit 77; fi
  [ $rc = 0 ] || fail "$mode run failed"
done
