#!/bin/sh
# A C++ program with MPI_THREAD_MULTIPLE (4 threads per rank, integer and float messages,
# communicator churn) passes without MPIZip, with it, and with the protocol on and compression
# forced. Exit 77 (skip) when the MPI does not provide MPI_THREAD_MULTIPLE.
. "$(dirname "$0")/lib.sh"
for mode in plain mpizip forced; do
  if [ $mode = forced ]; then
    out=$(MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0" run_mpi mpizip 2 \
          "$MPIZIP_BUILDDIR/tests/mpi/threads" 2>&1); rc=$?
  else
    out=$(run_mpi "$mode" 2 "$MPIZIP_BUILDDIR/tests/mpi/threads" 2>&1); rc=$?
  fi
  echo "$out"
  if echo "$out" | grep -q "MPI_THREAD_MULTIPLE not provided"; then exit 77; fi
  [ $rc = 0 ] || fail "$mode run failed"
done
