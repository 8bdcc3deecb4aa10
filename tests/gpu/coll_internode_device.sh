#!/bin/sh
# The compressed collectives between nodes with device buffers: tests/gpu/coll_staged_device (every
# collective of tests/mpi/coll_cases.h, blocking and non-blocking, bit-exact against the same calls
# on host buffers) with every rank its own node (MPIZIP_FORCE_INTERNODE=1), the MPI library between
# nodes (MPIZIP_TRANSPORT=pmpi, whose device pieces are staged through host memory: the emulated
# transport's CUDA IPC pulls are coll_staged_device.sh's),
# so that the float MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block, MPI_Allgather,
# MPI_Alltoall, MPI_Scan and MPI_Exscan (and their non-blocking forms) of device buffers run on the two-shot's engine with
# their pieces compressed by the GPU codec, and MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv and
# MPI_Scatterv as MPIZip point-to-point messages (src/core/coll_pairwise.h): the statistics must
# show compressed fp32 or fp64 pieces, non-blocking collectives and pairwise collectives. 2 ranks every case, 3 ranks the cases whose results do not depend on
# the order of float reductions (--exact); then 4 ranks as 2 pretend nodes of 2 (hierarchical).
# Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/coll_staged_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
link="MPIZIP_TRANSPORT=pmpi MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for run in "2 MPIZIP_FORCE_INTERNODE=1" "3 MPIZIP_FORCE_INTERNODE=1" "4 MPIZIP_PRETEND_NODE_RANKS=2"; do
  np=${run%% *}
  env=${run#* }
  exact=
  [ "$np" -gt 2 ] && exact=--exact
  echo "== $np ranks, $env $exact"
  MPIZIP_TEST_ENV="$link $env" timeout 600 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
    run "$np" "$prog" $exact >"$out" 2>&1 || { tail -n 40 "$out"; fail "$np ranks, $env"; }
  grep -v "stats" "$out" | tail -n 3
  grep -Eq "sent fp(32|64) messages=[0-9]+ compressed=[1-9]" "$out" ||
    { grep "stats" "$out" | head -n 4; fail "$np ranks, $env: no compressed fp32 or fp64 piece in the statistics"; }
  grep -q "pairwise collectives=[1-9]" "$out" ||
    { grep "stats" "$out" | head -n 4; fail "$np ranks, $env: no v-collective as point-to-point messages"; }
  grep -q "non-blocking collectives=[1-9]" "$out" ||
    { grep "stats" "$out" | head -n 4; fail "$np ranks, $env: no non-blocking collective on the two-shot"; }
done
echo "coll_internode_device: ok"
