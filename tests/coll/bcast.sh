#!/bin/sh
# MPI_Bcast, MPI_Ibcast, MPI_Allgather, MPI_Iallgather, MPI_Alltoall, MPI_Ialltoall,
# MPI_Reduce_scatter_block and MPI_Reduce of float types on host buffers (tests/coll/bcast_test.cc)
# on 2, 3 and 4 ranks, every rank its own node (MPIZIP_FORCE_INTERNODE=1) with host compression, so that
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
  grep -q "non-blocking collectives=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks: no MPI_Ibcast ran on the two-shot"; }
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE_COMPRESS=0 MPIZIP_ALLREDUCE_PIECE_BYTES=64K" \
    run_mpi mpizip "$np" "$prog" || fail "uncompressed, $np ranks"
  MPIZIP_TEST_ENV="$base MPIZIP_ALLREDUCE=off" run_mpi mpizip "$np" "$prog" --library ||
    fail "the MPI library's collectives, $np ranks"
done
# MPI_Iallgather alone, compressed, on 3 and 16 ranks: every call on the two-shot (contiguous, in
# place and strided send datatypes: 2 counts x 3 forms x every type), counted by the statistics.
# MPI_Alltoall and MPI_Ialltoall alone the same way: every call with blocks of 16-byte multiples on
# the two-shot, its pieces compressed, the non-blocking ones counted (the statistics).
for np in 3 16; do
  MPIZIP_TEST_ENV="$base MPIZIP_STATS=1" run_mpi mpizip "$np" "$prog" --iallgather-only >"$out" 2>&1 ||
    { cat "$out"; fail "MPI_Iallgather, $np ranks"; }
  n=$(grep -o "non-blocking collectives=[0-9]*" "$out" | head -n 1 | cut -d= -f2)
  [ "${n:-0}" -ge 24 ] ||
    { cat "$out"; fail "MPI_Iallgather, $np ranks: ${n:-no} non-blocking collectives counted, not 6 a type (at least 24)"; }
  MPIZIP_TEST_ENV="$base MPIZIP_STATS=1" run_mpi mpizip "$np" "$prog" --alltoall-only >"$out" 2>&1 ||
    { cat "$out"; fail "MPI_Alltoall, $np ranks"; }
  n=$(grep -o "non-blocking collectives=[0-9]*" "$out" | head -n 1 | cut -d= -f2)
  [ "${n:-0}" -ge 24 ] ||
    { cat "$out"; fail "MPI_Ialltoall, $np ranks: ${n:-no} non-blocking collectives counted, not 6 a type (at least 24)"; }
  for t in bf16 fp16 fp32 fp64; do
    grep -q "sent $t messages=[0-9]* compressed=[1-9]" "$out" ||
      { cat "$out"; fail "MPI_Alltoall, $np ranks: no compressed $t piece in the statistics"; }
  done
done
# A rank without scratch memory for its non-blocking reduce-scatter and reduce (MPIZIP_FAULT=scratch
# on rank 1): every rank's call fails, none hangs, the communicator still works.
MPIZIP_TEST_ENV="$base" timeout -k 10 120 sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 3 \
  '$MPIZIP_SRCDIR/tests/mpi/rank_env.sh' 1 MPIZIP_FAULT=scratch -- '$prog' --scratch-fault" >"$out" 2>&1 ||
  { cat "$out"; fail "scratch fault: exit $?"; }
[ "$(grep -c 'scratch fault: rank [0-9]: failed as expected' "$out")" = 3 ] ||
  { cat "$out"; fail "scratch fault: not every rank failed as expected"; }
# Pretend nodes (MPIZIP_PRETEND_NODE_RANKS): 4 ranks as 2 nodes of 2, 6 as 3 of 2, 8 as 2 of 4, 16
# as 4 of 4. The
# broadcasts, allgathers and reduce-scatters run in stages (coll/hierarchical.h), every root
# broadcast from, the reduce-scatters compared with the hierarchical fold (--pretend); compressed
# (the statistics must count hierarchical collectives and compressed pieces) and, on 4 ranks, not.
pbase="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE_MIN_BYTES=0"
for shape in 4:2 6:2 8:4 16:4; do
  np=${shape%:*}; g=${shape#*:}
  quick=; [ "$np" -gt 4 ] && quick=--quick  # (no million-element counts beyond 4 ranks, for time)
  MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=$g MPIZIP_STATS=1" \
    run_mpi mpizip "$np" "$prog" --pretend "$g" $quick >"$out" 2>&1 ||
    { cat "$out"; fail "hierarchical, compressed, $np ranks as nodes of $g"; }
  grep -q "hierarchical collectives=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks as nodes of $g: no hierarchical collective counted"; }
  grep -q "compressed=[1-9]" "$out" ||
    { cat "$out"; fail "$np ranks as nodes of $g: the statistics show no compressed piece"; }
  [ "$np" = 4 ] || continue  # (the uncompressed run on 4 ranks only, for time)
  MPIZIP_TEST_ENV="$pbase MPIZIP_PRETEND_NODE_RANKS=$g MPIZIP_ALLREDUCE_COMPRESS=0" \
    run_mpi mpizip "$np" "$prog" --pretend "$g" || fail "hierarchical, uncompressed, $np ranks as nodes of $g"
done
echo "bcast.sh: ok"
