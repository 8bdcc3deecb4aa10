#!/bin/sh
# MPI_Allreduce and MPI_Iallreduce on host buffers (tests/coll/allreduce_test.cc) on 2, 3, 4 and 8
# ranks, with host compression and every rank its own node (MPIZIP_FORCE_INTERNODE=1), so that the
# two-shot's pieces travel compressed:
#   - every call on the two-shot (MPIZIP_ALLREDUCE_MIN_BYTES=0), compressed, then uncompressed
#     (MPIZIP_ALLREDUCE_COMPRESS=0) with another piece size: the results must be bitwise the same;
#     the compressed run also passes mismatched arguments, which must fail on every rank; and
#     compressed with every piece decoded as it lands (MPIZIP_ALLREDUCE_FUSE=0) and 16 KiB pieces,
#     the same bits;
#   - the default threshold (small float and double calls go to the MPI library);
#   - 2 ranks: a second identical compressed run (run-to-run determinism), and plain MPI.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/coll/allreduce_test"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1"
run_mpi plain 2 "$prog" || fail "plain MPI, 2 ranks"
for np in 2 3 4 8; do
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_MIN_BYTES=0" \
    run_mpi mpizip "$np" "$prog" --twoshot-from 0 --hashes "$tmp/compressed.$np" --mismatch ||
    fail "two-shot, compressed, $np ranks"
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_ALLREDUCE_COMPRESS=0 MPIZIP_ALLREDUCE_PIECE_BYTES=64K" \
    run_mpi mpizip "$np" "$prog" --twoshot-from 0 --hashes "$tmp/raw.$np" ||
    fail "two-shot, uncompressed, $np ranks"
  cmp "$tmp/compressed.$np" "$tmp/raw.$np" || fail "$np ranks: compressed and uncompressed results differ"
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_ALLREDUCE_FUSE=0 MPIZIP_ALLREDUCE_PIECE_BYTES=16K" \
    run_mpi mpizip "$np" "$prog" --twoshot-from 0 --hashes "$tmp/unfused.$np" ||
    fail "two-shot, compressed, every piece decoded as it lands, $np ranks"
  cmp "$tmp/compressed.$np" "$tmp/unfused.$np" || fail "$np ranks: fused and unfused decoding differ"
  MPIZIP_TEST_ENV="$base" run_mpi mpizip "$np" "$prog" --twoshot-from 1048576 ||
    fail "default threshold, $np ranks"
done
MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_MIN_BYTES=0" \
  run_mpi mpizip 2 "$prog" --twoshot-from 0 --hashes "$tmp/again.2" || fail "two-shot, second run"
cmp "$tmp/compressed.2" "$tmp/again.2" || fail "2 ranks: two identical runs differ"
