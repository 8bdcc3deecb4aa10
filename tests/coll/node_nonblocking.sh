#!/bin/sh
# Non-blocking collectives within one node, deferred until every rank has said where its buffers
# are (src/core/coll_deferred.h), on host buffers: with host compression on (which counts host
# buffers as device ones) every deferred call takes MPIZip's way (the two-shot's engine between
# the node's ranks); with the protocol on alone, the MPI library's on its own duplicate. osu-bench's
# non-blocking collectives check every result (-c) on 2 and 3 ranks, with the calls' overlap of
# computation, and the statistics must count the deferred calls and the way they took.
. "$(dirname "$0")/../mpi/lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 3; do
  for prog in osu_iallreduce osu_ibcast osu_iallgather osu_ialltoall osu_ireduce osu_ireduce_scatter; do
    for way in mpizip library; do
      env="MPIZIP_PROTOCOL=on"
      [ "$way" = mpizip ] && env="MPIZIP_HOST_COMPRESS=1"
      MPIZIP_TEST_ENV="$env MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_STATS=1" timeout -k 10 120 \
        sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$MPIZIP_BUILDDIR/osu-bench/$prog' -m 16:65536 -i 3 -x 1 -c" \
        >"$out" 2>&1 || { tail -n 20 "$out"; fail "$prog, $np ranks, $way (a hang times out)"; }
      if grep -q "Fail" "$out" || ! grep -q "Pass" "$out"; then
        tail -n 20 "$out"; fail "$prog, $np ranks, $way: a result differs"
      fi
      counts=$(grep "^\[mpizip 0\] stats: comm 0 " "$out" | grep -oE "deferred collectives=[0-9]+ mpizip=[0-9]+")
      n=$(echo "$counts" | sed -E 's/deferred collectives=([0-9]+).*/\1/')
      m=$(echo "$counts" | sed -E 's/.*mpizip=([0-9]+)/\1/')
      # (osu_ireduce_scatter's blocks on 3 ranks are never a multiple of 16 bytes, which the
      # engine's shards need: none is deferred there.)
      if [ "$prog" = osu_ireduce_scatter ] && [ "$np" = 3 ]; then
        [ -z "$counts" ] || fail "$prog, $np ranks, $way: blocks the engine cannot shard were deferred"
        continue
      fi
      [ "${n:-0}" -gt 0 ] || { grep stats "$out" | head -n 4; fail "$prog, $np ranks, $way: no deferred call counted"; }
      if [ "$way" = mpizip ]; then
        [ "$m" = "$n" ] || fail "$prog, $np ranks: $m of $n deferred calls took MPIZip's way, with every rank's buffers suiting it"
      else
        [ "$m" = 0 ] || fail "$prog, $np ranks: $m deferred calls took MPIZip's way on host buffers"
      fi
    done
  done
done
echo "node_nonblocking: ok"
