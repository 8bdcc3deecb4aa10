#!/bin/sh
# MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv, MPI_Scatterv and MPI_Allgatherv on host buffers
# (tests/coll/pairwise_test.cc)
# with MPIZip's protocol on, on 2, 3 and 4 ranks: every rank its own node (MPIZIP_FORCE_INTERNODE=1),
# blocking and non-blocking, as MPIZip point-to-point messages, and MPI_Gather and MPI_Scatter of
# float types the same way from MPIZIP_ALLREDUCE_MIN_BYTES (0 here: the statistics must count every
# call); the same with host compression
# (their float blocks must travel compressed on the pairwise communicator); MPIZIP_PAIRWISE=off, and
# one node on host buffers (both the MPI library's: none counted); one node with host compression,
# under which host buffers count as device ones do (the blocking calls agree on messages, every one
# counted; the non-blocking ones deferred, and as messages too); plain MPI; 16 ranks as pretend nodes of 4,
# compressed. Then a receiver expecting fewer bytes than its sender sends gets MPI_ERR_TRUNCATE.
# Every run must deliver the senders' bits.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/coll/pairwise_test"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_mpi plain 2 "$prog" --quick || fail "plain MPI, 2 ranks"
for np in 2 3 4; do
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_STATS=1" timeout -k 10 300 \
    sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog'" \
    >"$out" 2>&1 || { tail -n 30 "$out"; fail "$np ranks, protocol on (a hang times out)"; }
  # Every call, blocking and non-blocking, as messages: rank 0's pairwise count equals its calls.
  calls=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" |
    grep -oiE "MPI_I?(alltoallv|alltoallw|gatherv|scatterv|allgatherv|gather|scatter) calls=[0-9]+" | cut -d= -f2 |
    awk '{ s += $1 } END { print s + 0 }')
  pairwise=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" | grep -oE "pairwise collectives=[0-9]+" | cut -d= -f2)
  [ "${calls:-0}" -gt 0 ] && [ "${pairwise:-0}" = "$calls" ] ||
    { grep stats "$out" | head -n 5; fail "$np ranks: ${pairwise:-no} pairwise collectives for $calls calls"; }
  MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1" \
    run_mpi mpizip "$np" "$prog" >"$out" 2>&1 || { tail -n 30 "$out"; fail "$np ranks, compressed"; }
  grep "MPIZip pairwise" "$out" | grep -Eq "sent (fp32|fp64|bf16|fp16) messages=[0-9]+ compressed=[1-9]" ||
    { grep stats "$out" | head -n 8; fail "$np ranks: no compressed block on the pairwise communicator"; }
  for env in "MPIZIP_FORCE_INTERNODE=1 MPIZIP_PAIRWISE=off" "MPIZIP_PAIRWISE=auto"; do
    MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_STATS=1 $env" run_mpi mpizip "$np" "$prog" --quick \
      >"$out" 2>&1 || { tail -n 30 "$out"; fail "$np ranks, $env"; }
    if grep -q "pairwise collectives=" "$out"; then fail "$np ranks, $env: pairwise collectives ran"; fi
  done
  MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_STATS=1" timeout -k 10 300 \
    sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog' --quick" \
    >"$out" 2>&1 || { tail -n 30 "$out"; fail "$np ranks, one node, host compression"; }
  calls=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" |
    grep -oiE "MPI_(alltoallv|alltoallw|gatherv|scatterv|allgatherv|gather|scatter) calls=[0-9]+" | cut -d= -f2 |
    awk '{ s += $1 } END { print s + 0 }')
  pairwise=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" | grep -oE "pairwise collectives=[0-9]+" | cut -d= -f2)
  # Every blocking call as messages, and the non-blocking ones deferred (src/core/coll_deferred.h)
  # once a blocking one has set the route up: all of those as messages too.
  [ "${calls:-0}" -gt 0 ] && [ "${pairwise:-0}" -ge "$calls" ] ||
    { grep stats "$out" | head -n 5; fail "$np ranks, one node: ${pairwise:-no} pairwise collectives for $calls blocking calls"; }
  deferred=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" | grep -oE "deferred collectives=[0-9]+ mpizip=[0-9]+")
  n=$(echo "$deferred" | sed -E 's/deferred collectives=([0-9]+).*/\1/')
  m=$(echo "$deferred" | sed -E 's/.*mpizip=([0-9]+)/\1/')
  [ "${n:-0}" -gt 0 ] && [ "$m" = "$n" ] ||
    { grep stats "$out" | head -n 5; fail "$np ranks, one node: deferred non-blocking calls: ${deferred:-none}"; }
done
MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 MPIZIP_PRETEND_NODE_RANKS=4 MPIZIP_MIN_BYTES=0" \
  run_mpi mpizip 16 "$prog" --quick || fail "16 ranks as pretend nodes of 4, compressed"
for np in 2 3; do
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_FORCE_INTERNODE=1" timeout -k 10 120 sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog' --truncate" \
    >"$out" 2>&1 || { cat "$out"; fail "$np ranks, truncation"; }
done
echo "pairwise: ok"
