#!/bin/sh
# Faults in the middle of the work end in an error or a documented fallback on every rank within a
# bounded time, never a hang or wrong data (tests/mpi/faults.c). Each run is bounded by
# FAULTS_TIMEOUT seconds; a hang fails. FAULTS_ALLREDUCE_RANKS: the rank counts of the allreduce
# cases (default "2 4").
#   - a send that fails after its match message left (MPIZIP_FAULT=send on rank 0, chunked host
#     compression): the sender's and the receiver's calls return an error, blocking and
#     non-blocking, and the communicator goes on working; over the MPI library and over UCX;
#   - UCX failing to start on one rank (MPIZIP_FAULT=ucx-start on rank 1, every rank its own node):
#     every rank uses the MPI library between nodes instead, each says so in one warning, and
#     tests/mpi/agreement.c's collectives and messages are exact;
#   - a rank whose part of a two-shot allreduce fails after the hellos (MPIZIP_FAULT=allreduce on
#     rank 1, as exhausted device memory would; 2 and 4 ranks, compressed and raw pieces, over the
#     MPI library and over UCX): every rank's allreduce returns an error, blocking and
#     non-blocking, and a broadcast from rank 0 on every rank but the root (the failing rank's
#     own class; MPIZip's peer-failure code on the others), the
#     failing rank and its peers each say why in the log, and the next messages and allreduce are
#     exact;
#   - a rank that dies mid-transfer: the launcher ends the job (neither Open MPI 4 nor MPICH lets
#     the survivors continue; docs/DESIGN.md, "Faults") within the bound; MPIZip's own transport
#     (UCX) and progress thread add no wait.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/faults"
agree="$MPIZIP_BUILDDIR/tests/mpi/agreement"
wrap="$MPIZIP_SRCDIR/tests/mpi/rank_env.sh"
limit=${FAULTS_TIMEOUT:-90}
compress="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_CHUNK_BYTES=256K"
ucx=0
"$MPIZIP_BUILDDIR/tools/mpizip-info" 2>/dev/null | grep -q "^  UCX  *on" && ucx=1

# run SETTINGS RANK RANK_SETTING PROGRAM ARGS...: 2 ranks under MPIZip, RANK_SETTING on RANK only;
# output in $out, exit status in $rc.
run() {
  r_env=$1 r_rank=$2 r_setting=$3
  shift 3
  out=$(MPIZIP_TEST_ENV="$r_env" timeout -k 10 "$limit" sh -c \
        ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip ${np:-2} '$wrap' $r_rank '$r_setting' -- $*" 2>&1)
  rc=$?
}

transports="pmpi"
[ "$ucx" = 1 ] && transports="pmpi ucx"
for t in $transports; do
  run "$compress MPIZIP_TRANSPORT=$t MPIZIP_FORCE_INTERNODE=1" 0 MPIZIP_FAULT=send "$prog" send
  echo "$out" | grep -E "faults:|error"
  [ $rc -eq 124 ] && fail "send fault over $t: hung (no end within $limit s)"
  [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "send fault over $t: exit $rc"; }
  for r in 0 1; do
    echo "$out" | grep -q "faults: send: rank $r: ok" || fail "send fault over $t: rank $r not ok"
  done
  n=$(echo "$out" | grep -c "failed:")
  [ "$n" = 4 ] || fail "send fault over $t: expected 4 failed calls (2 a rank), saw $n"
done

if [ "$ucx" = 1 ]; then
  run "MPIZIP_HOST_COMPRESS=1 MPIZIP_TRANSPORT=ucx MPIZIP_FORCE_INTERNODE=1 MPIZIP_LOG=info" 1 \
      MPIZIP_FAULT=ucx-start "$agree"
  echo "$out" | grep -E "agreement:|UCX"
  [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "ucx-start fault: exit $rc"; }
  echo "$out" | grep -q "agreement: ok" || fail "ucx-start fault: results wrong"
  for r in 0 1; do
    echo "$out" | grep -q "\[mpizip $r\] warn: UCX transport did not start (transport error); inter-node transfers use PMPI" ||
      fail "ucx-start fault: rank $r did not say that UCX did not start"
  done
  echo "$out" | grep -q "\[mpizip 0\] info: UCX did not start on every rank" ||
    fail "ucx-start fault: rank 0 did not say that UCX failed on another rank"
else
  echo "ucx-start fault: skipped (built without UCX)"
fi

# 1M floats in 256 KiB pieces: several pieces per rank; rank 1 fails as its second one starts.
for np in ${FAULTS_ALLREDUCE_RANKS:-2 4}; do
  for pieces in compressed raw; do
    mode=$compress
    [ $pieces = raw ] && mode="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=0"
    for t in $transports; do
      run "$mode MPIZIP_ALLREDUCE=twoshot MPIZIP_ALLREDUCE_PIECE_BYTES=256K MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=$t" 1 \
          MPIZIP_FAULT=allreduce "$prog" allreduce 1048576
      what="allreduce fault over $t, $np ranks, $pieces pieces"
      echo "$out" | grep -E "faults:|MPI_Allreduce"
      [ $rc -eq 124 ] && fail "$what: hung (no end within $limit s)"
      [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "$what: exit $rc"; }
      r=0
      while [ $r -lt $np ]; do
        echo "$out" | grep -q "faults: allreduce: rank $r: ok" || fail "$what: rank $r not ok"
        [ "$(echo "$out" | grep -c "faults: allreduce: rank $r: .*allreduce failed")" = 2 ] ||
          fail "$what: rank $r: expected 2 failed allreduces"
        r=$((r + 1))
      done
      r=1
      while [ $r -lt $np ]; do
        echo "$out" | grep -q "faults: allreduce: rank $r: broadcast failed" ||
          fail "$what: rank $r: the broadcast did not fail"
        r=$((r + 1))
      done
      [ "$(echo "$out" | grep -c "\[mpizip 1\] warn: MPI_Allreduce: this rank's part failed (out of memory)")" = 3 ] ||
        fail "$what: rank 1 did not say three times (two allreduces, a broadcast) that its part failed"
      echo "$out" | grep -q "\[mpizip 0\] warn: MPI_Allreduce: rank [0-9]* sent piece [0-9]* empty" ||
        fail "$what: rank 0 did not say that a peer's part failed"
      [ "$(echo "$out" | grep -c "rank 0: .*allreduce failed: MPIZip: another rank's part of the operation failed")" = 2 ] ||
        fail "$what: rank 0's error is not MPIZip's peer-failure code"
    done
  done
done
np=2

for t in $transports; do
  start=$(date +%s)
  run "$compress MPIZIP_TRANSPORT=$t MPIZIP_FORCE_INTERNODE=1" 1 MPIZIP_LOG=warn "$prog" dead 16777216
  took=$(( $(date +%s) - start ))
  echo "$out" | grep -E "faults:" | head -4
  echo "dead peer over $t: the job ended with status $rc after $took s"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "dead peer over $t: hung (no end within $limit s)"
  [ $rc -ne 0 ] || fail "dead peer over $t: the job reported success"
done
echo "faults: all cases ended as expected"
exit 0
