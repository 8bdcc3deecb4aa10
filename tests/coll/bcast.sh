#!/bin/sh
# MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block and MPI_Reduce of float types on host buffers
# (tests/coll/bcast_test.cc) on 2, 3 and 4 ranks, every rank its own node (MPIZIP_FORCE_INTERNODE=1) with host compression, so that
# MPIZip runs them on its two-shot engine with their pieces compressed (the statistics must show
# compressed messages); then uncompressed (MPIZIP_ALLREDUCE_COMPRESS=0); then with
# MPIZIP_ALLREDUCE=off (the MPI library's); and plain MPI. Every run must deliver the senders' bits.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/coll/bcast_test"
base="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_MIN_BYTES=0"
run_mpi plain 2 "$prog" --library || fail "plain MPI, 2 ranks"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 3 4; do
  MPIZIP_TEST_ENV="$base MPIZIP_STATS=1" run_mpi mpizip "$np" "$prog" >"$out" 2>&1 ||
    { cat "$out"; fail "compressed, $np ranks"; }
  grep -q "compressed=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks: the statistics show no compressed piece"; }
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_COMPRESS=0 MPIZIP_ALLREDUCE_PIECE_BYTES=64K" \
    run_mpi mpizip "$np" "$prog" || fail "uncompressed, $np ranks"
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE=off" run_mpi mpizip "$np" "$prog" --library ||
    fail "the MPI library's collectives, $np ranks"
done
echo "bcast.sh: ok"
