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
# Pretend nodes (MPIZIP_PRETEND_NODE_RANKS): 4 ranks as 2 nodes of 2, 6 as 3 of 2, 8 as 2 of 4, 16
# as 4 of 4 (oversubscribed). The two-shot's calls run in stages (coll/hierarchical.h): the results
# must be the hierarchical fold (--pretend), bitwise the same compressed and uncompressed (4 and 6
# ranks), and the
# statistics must count hierarchical collectives; MPIZIP_HIERARCHICAL=off runs the flat two-shot
# (the rank-order fold) on the same pretend nodes.
pbase="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE_MIN_BYTES=0"
out="$tmp/out"
for shape in 4:2 6:2 8:4; do
  np=${shape%:*}; g=${shape#*:}
  quick=; [ "$np" -gt 4 ] && quick=--quick  # (fp32 and bf16 only beyond 4 ranks, for time)
  MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=$g MPIZIP_STATS=1" \
    run_mpi mpizip "$np" "$prog" --twoshot-from 0 --pretend "$g" --hashes "$tmp/hier.$np" \
      --mismatch $quick >"$out" 2>&1 || { cat "$out"; fail "hierarchical, compressed, $np ranks as nodes of $g"; }
  grep -q "hierarchical collectives=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks as nodes of $g: no hierarchical collective counted"; }
  grep -q "compressed=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks as nodes of $g: nothing compressed"; }
  [ "$np" = 8 ] && continue  # (the uncompressed run on 4 and 6 ranks only, for time)
  MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=$g MPIZIP_ALLREDUCE_COMPRESS=0 MPIZIP_ALLREDUCE_PIECE_BYTES=64K" \
    run_mpi mpizip "$np" "$prog" --twoshot-from 0 --pretend "$g" --hashes "$tmp/hier-raw.$np" $quick ||
    fail "hierarchical, uncompressed, $np ranks as nodes of $g"
  cmp "$tmp/hier.$np" "$tmp/hier-raw.$np" ||
    fail "$np ranks as nodes of $g: hierarchical results differ compressed and uncompressed"
done
MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=2 MPIZIP_HIERARCHICAL=off MPIZIP_STATS=1" \
  run_mpi mpizip 4 "$prog" --twoshot-from 0 >"$out" 2>&1 ||
  { cat "$out"; fail "MPIZIP_HIERARCHICAL=off, 4 ranks as nodes of 2"; }
! grep -q "hierarchical collectives=" "$out" ||
  { cat "$out"; fail "MPIZIP_HIERARCHICAL=off still ran hierarchical collectives"; }
MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=4" \
  run_mpi mpizip 16 "$prog" --twoshot-from 0 --pretend 4 --quick || fail "hierarchical, 16 ranks as nodes of 4"
echo "allreduce.sh: ok"
