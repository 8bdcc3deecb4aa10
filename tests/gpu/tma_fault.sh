#!/bin/sh
# The TMA intra-node collectives never leave a GPU waiting forever (tests/gpu/tma_fault.cc), 2
# ranks sharing the GPU (MPIZIP_GPU_SHARING=concurrent, with or without MPS), MPIZIP_TMA_MIN_BYTES=0:
#   - rank 1 fails its part (MPIZIP_FAULT=tma-fail, as a failed kernel launch): every rank's call
#     returns an MPI error, rank 0's as soon as its kernel reads rank 1's fault word (well before
#     MPIZIP_TMA_TIMEOUT_MS); with the end barrier in GPU memory and on the host;
#   - rank 1 skips its kernel without a word (MPIZIP_FAULT=tma-silent): rank 0's kernel gives up
#     after MPIZIP_TMA_TIMEOUT_MS=2000 and every rank's call returns an MPI error;
#   - rank 1 runs with another MPIZIP_TMA_MAX_CTAS: the communicator's settings disagree, MPIZip is
#     off for it with one warning naming the setting, and the results are exact.
# Each run is bounded by TMA_TIMEOUT seconds (a hang fails). Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/tma_fault"
wrap="$MPIZIP_SRCDIR/tests/mpi/rank_env.sh"
"$prog" >/dev/null 2>&1; [ $? = 77 ] && exit 77
limit=${TMA_TIMEOUT:-120}
base="MPIZIP_LOG=info MPIZIP_GPU_SHARING=concurrent MPIZIP_TMA_MIN_BYTES=0"

# run ENV RANK1_SETTING MODE: the program on 2 ranks, RANK1_SETTING on rank 1 only; output in $out.
run() {
  out=$(MPIZIP_TEST_ENV="$base $1" timeout "$limit" sh -c \
        ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 2 '$wrap' 1 '$2' -- '$prog' $3" 2>&1)
  rc=$?
  echo "$out" | grep -E "tma_fault:|TMA collective|intra-node|differ"
  [ $rc -eq 124 ] && fail "$1 / rank 1 $2: hung (no end within $limit s)"
  [ $rc -eq 0 ] || { echo "$out" | tail -30; fail "$1 / rank 1 $2: exit $rc"; }
}

for sync in flags host; do
  run "MPIZIP_TMA_SYNC=$sync" MPIZIP_FAULT=tma-fail fail
  echo "$out" | grep -q "TMA collectives on for 2 ranks" || fail "$sync, fail: the engine was not on"
  echo "$out" | grep -q "\[mpizip 0\] error: MPI_Allreduce (intra-node): a peer's part failed" ||
    fail "$sync, fail: rank 0 should report its peer's failure"
  echo "$out" | grep -q "\[mpizip 1\] error: MPI_Allreduce (intra-node): GPU runtime error" ||
    fail "$sync, fail: rank 1 should report its own failure"
done

run "MPIZIP_TMA_SYNC=flags MPIZIP_TMA_TIMEOUT_MS=2000" MPIZIP_FAULT=tma-silent fail
echo "$out" | grep -q "\[mpizip 0\] error: MPI_Allreduce (intra-node): a peer did not answer in time" ||
  fail "silent: rank 0 should time out"

run "" MPIZIP_TMA_MAX_CTAS=4 agree
n=$(echo "$out" | grep -c "warn: MPIZIP_TMA_MAX_CTAS differs across the ranks of MPI_COMM_WORLD (MPIZIP_TMA_MAX_CTAS 8 on rank 0, 4 on rank 1)")
[ "$n" = 1 ] || fail "different MPIZIP_TMA_MAX_CTAS: expected one warning naming it, saw $n"
if echo "$out" | grep -q "TMA collectives on"; then fail "different MPIZIP_TMA_MAX_CTAS: the engine ran"; fi
exit 0
