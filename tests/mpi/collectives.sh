#!/bin/sh
# Host-buffer collectives (tests/mpi/collectives.cc: every blocking and non-blocking collective,
# MPI_IN_PLACE, v- and w-variants, an intercommunicator, neighbourhoods) give bitwise the same
# results without MPIZip and with it: in the bypass, with statistics on (every collective reaches
# MPIZip's handlers), and with the protocol and its progress thread on (MPIZIP_HOST_COMPRESS=1);
# on 2, 3 and 4 ranks. The job has no GPU (none is made visible), so MPIX_Query_cuda_support()
# must say 0 in each.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/collectives"
CUDA_VISIBLE_DEVICES= HIP_VISIBLE_DEVICES=
export CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for np in 2 3 4; do
  run_mpi plain "$np" "$prog" >"$tmp/plain" || fail "$np ranks, plain MPI"
  grep -q "^collectives: ok" "$tmp/plain" || fail "$np ranks, plain MPI: no result"
  i=0
  for env in "" "MPIZIP_STATS=1" "MPIZIP_HOST_COMPRESS=1"; do
    i=$((i + 1))
    MPIZIP_TEST_ENV="$env" run_mpi mpizip "$np" "$prog" >"$tmp/mpizip$i" 2>"$tmp/err$i" ||
      { cat "$tmp/err$i" >&2; fail "$np ranks with MPIZip (${env:-defaults})"; }
    cmp "$tmp/plain" "$tmp/mpizip$i" ||
      { diff "$tmp/plain" "$tmp/mpizip$i" | head >&2; fail "$np ranks: results differ with MPIZip (${env:-defaults})"; }
  done
  # With statistics on, the collectives were counted by MPIZip's wrappers.
  for call in MPI_Bcast MPI_Ibcast MPI_Gatherv MPI_Ialltoallw MPI_Ineighbor_alltoallw MPI_Exscan; do
    grep -q "$call calls=" "$tmp/err2" || fail "$np ranks: no statistics for $call"
  done
done
echo "collectives: the same results on 2-4 ranks without and with MPIZip"
