#!/bin/sh
# Device-buffer MPI_Allreduce under MPIZip's two-shot on 2, 3 and 4 ranks sharing the GPU
# (tests/gpu/allreduce_device.cc), six ways that must give bitwise the same results: every rank its
# own node (MPIZIP_FORCE_INTERNODE=1), compressed (the last pieces decoded inside the fold, and
# every piece decoded as it lands: MPIZIP_ALLREDUCE_FUSE=0) and uncompressed; host ranks compressing too
# (MPIZIP_HOST_COMPRESS=1); over the emulated link; and the ranks on one node (CUDA IPC, uncompressed).
# Then rank 1's part failing mid-collective (MPIZIP_FAULT=allreduce, as exhausted device memory
# would), compressed and on one node: every rank gets an error, says why, and the next allreduce is
# exact. Skipped (77) where there is no GPU. ALLREDUCE_DEVICE_NPS="2" runs only those rank counts.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/allreduce_device"
"$prog" >/dev/null 2>&1; [ $? = 77 ] && exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base="MPIZIP_ALLREDUCE=twoshot MPIZIP_MIN_BYTES=0"
for np in ${ALLREDUCE_DEVICE_NPS:-2 3 4}; do
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1" run_mpi mpizip "$np" "$prog" --hashes "$tmp/compressed" ||
    fail "$np ranks, compressed"
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_COMPRESS=0" \
    run_mpi mpizip "$np" "$prog" --hashes "$tmp/raw" || fail "$np ranks, uncompressed"
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_HOST_COMPRESS=1" \
    run_mpi mpizip "$np" "$prog" --hashes "$tmp/host" || fail "$np ranks, host compression"
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=47" \
    run_mpi mpizip "$np" "$prog" --hashes "$tmp/emulated" || fail "$np ranks, emulated link"
  MPIZIP_TEST_ENV="$base" run_mpi mpizip "$np" "$prog" --hashes "$tmp/node" || fail "$np ranks, one node"
  MPIZIP_TEST_ENV="$base MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_FUSE=0" \
    run_mpi mpizip "$np" "$prog" --hashes "$tmp/unfused" || fail "$np ranks, compressed, decoded as landed"
  for f in raw host emulated node unfused; do
    cmp "$tmp/compressed" "$tmp/$f" || fail "$np ranks: $f results differ from the compressed ones"
  done
done
for np in ${ALLREDUCE_DEVICE_NPS:-2 4}; do
  for where in "MPIZIP_FORCE_INTERNODE=1" "MPIZIP_FORCE_INTERNODE=0"; do
    out=$(MPIZIP_TEST_ENV="$base $where MPIZIP_ALLREDUCE_PIECE_BYTES=1M" timeout -k 10 120 \
          sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$MPIZIP_SRCDIR/tests/mpi/rank_env.sh' 1 MPIZIP_FAULT=allreduce -- '$prog' --fault" 2>&1) ||
      fail "$np ranks, $where, rank 1's part failing: exit $?: $out"
    echo "$out" | grep -E "fault|MPI_Allreduce"
    [ "$(echo "$out" | grep -c -- "--fault: rank [0-9]*: ok$")" = "$np" ] ||
      fail "$np ranks, $where, rank 1's part failing: not ok on every rank"
    echo "$out" | grep -q "\[mpizip 1\] warn: MPI_Allreduce: this rank's part failed (out of memory)" ||
      fail "$np ranks, $where: rank 1 did not say that its part failed"
  done
done
