#!/bin/sh
# MPI_Scan, MPI_Exscan, MPI_Iscan and MPI_Iexscan of float types on host buffers
# (tests/coll/scan_test.cc) on 2, 3 and 4 ranks, every rank its own node (MPIZIP_FORCE_INTERNODE=1)
# with host compression, so that MPIZip runs them on its two-shot engine's prefix shape with their
# pieces compressed (the statistics must show compressed float messages, which only these calls
# send, and the non-blocking ones counted); then uncompressed (MPIZIP_ALLREDUCE_COMPRESS=0, small
# pieces); then one node, where the non-blocking calls are deferred onto the same engine (the
# statistics must count them on MPIZip's way; the blocking ones are the MPI library's there without
# a GPU, checked within tolerance); then with MPIZIP_ALLREDUCE=off (the MPI library's)
# and plain MPI, within tolerance; then 4 ranks as 2 pretend nodes of 2. MPIZip's runs must give
# the rank-order fold bit for bit.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/coll/scan_test"
base="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE_MIN_BYTES=0"
run_mpi plain 3 "$prog" --library || fail "plain MPI, 3 ranks"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 3 4; do
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_STATS=1" run_mpi mpizip "$np" "$prog" >"$out" 2>&1 ||
    { cat "$out"; fail "compressed, $np ranks"; }
  grep "\[mpizip 1\] stats: comm 0 " "$out" | grep -q "sent fp32 messages=[0-9]* compressed=[1-9]" ||
    { cat "$out"; fail "$np ranks: the statistics show no compressed float piece"; }
  grep -q "non-blocking collectives=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks: no MPI_Iscan ran on the two-shot"; }
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_COMPRESS=0 MPIZIP_ALLREDUCE_PIECE_BYTES=16K" \
    run_mpi mpizip "$np" "$prog" || fail "uncompressed, $np ranks"
  MPIZIP_TEST_ENV="$base MPIZIP_STATS=1" run_mpi mpizip "$np" "$prog" --library-blocking >"$out" 2>&1 ||
    { cat "$out"; fail "one node, $np ranks"; }
  grep -q "deferred collectives=[1-9][0-9]* mpizip=[1-9]" "$out" ||
    { cat "$out"; fail "one node, $np ranks: no non-blocking scan deferred onto MPIZip's engine"; }
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE=off" run_mpi mpizip "$np" "$prog" --library ||
    fail "the MPI library's scans, $np ranks"
done
# 4 ranks as 2 pretend nodes of 2: the flat prefix shape across both, compressed between them.
MPIZIP_TEST_ENV="$base MPIZIP_PRETEND_NODE_RANKS=2" run_mpi mpizip 4 "$prog" ||
  fail "4 ranks as 2 pretend nodes of 2"
echo "scan: MPI_Scan and MPI_Exscan, blocking and not, on MPIZip's engine bit for bit, compressed or not"
