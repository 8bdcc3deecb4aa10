#!/bin/sh
# Collectives with device buffers under MPIZip on a non-CUDA-aware MPI (tests/gpu/coll_staged_device.cc:
# every collective, blocking and non-blocking, bit-exact against the same calls on host buffers,
# and MPIX_Query_cuda_support() = 1) on 2, 3 and 4 ranks sharing the GPU; also without the
# progress thread (requests completed from the application's waits and tests alone) and with
# statistics on. Then the blocking collectives on MPIZip's intra-node engine at every size
# (MPIZIP_TMA_MIN_BYTES=0; MPIZIP_GPU_SHARING=concurrent lets the engine run where ranks share a GPU
# without MPS, slowly): 2 ranks every case, 3 and 4 ranks the cases whose results do not depend on
# the order of float reductions (--exact), and the statistics must show the engine ran; 2 and 3
# ranks again with the copies on the GPU runtime's copies (MPIZIP_TMA_COPY_ENGINE_BYTES=0), and
# 2 and 4 ranks with every device buffer carved out of one allocation (COLL_SLAB=1: the engine
# shares small calls' buffers as they are; most calls must count unstaged).
# Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/coll_staged_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
for run in "2" "3" "4" "3 MPIZIP_PROGRESS_THREAD=off" "2 MPIZIP_STATS=1"; do
  np=${run%% *}
  env=$(echo "$run" | cut -s -d' ' -f2-)
  echo "== $np ranks: ${env:-defaults}"
  MPIZIP_TEST_ENV="$env" timeout 600 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
    run "$np" "$prog" || fail "$np ranks, ${env:-defaults}"
done
# Every float collective on MPIZip's two-shot engine at every size (MPIZIP_ALLREDUCE_MIN_BYTES=0,
# MPIZIP_MIN_BYTES=0), the smallest calls included: every rank its own node over the emulated link
# (pieces of a few bytes sent as CUDA IPC transfers whose senders move them aside when their
# receivers are late), and within one node, where the non-blocking ones are deferred onto the same
# engine (the statistics must count them there). 2 ranks every case, 3 ranks --exact; counts up to
# 1000 (the small calls are the point).
for run in "2 MPIZIP_TRANSPORT=emulated MPIZIP_FORCE_INTERNODE=1" "3 MPIZIP_TRANSPORT=emulated MPIZIP_FORCE_INTERNODE=1" "2" "3"; do
  np=${run%% *}
  extra=$(echo "$run" | cut -s -d' ' -f2-)
  exact=
  [ "$np" -gt 2 ] && exact=--exact
  echo "== $np ranks: every float collective on the two-shot ${extra:-within one node} $exact"
  out=$(MPIZIP_TEST_ENV="MPIZIP_ALLREDUCE_MIN_BYTES=0 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1 MPIZIP_LOG=info $extra" timeout 300 \
    sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' run "$np" "$prog" 1000 $exact 2>&1)
  rc=$?
  [ "$rc" = 0 ] || { echo "$out" | grep -v "stats" | tail -n 30; fail "$np ranks, two-shot at every size ${extra:-within one node}"; }
  [ -n "$extra" ] || echo "$out" | grep -q "deferred collectives=[1-9][0-9]* mpizip=[1-9]" ||
    fail "$np ranks within one node: no non-blocking collective deferred onto MPIZip's engine"
done
# Then 2 and 3 ranks with every plan of copies alone on the GPU runtime's copies
# (MPIZIP_TMA_COPY_ENGINE_BYTES=0), counted by the statistics.
for run in 2 3 4 "2 MPIZIP_TMA_COPY_ENGINE_BYTES=0" "3 MPIZIP_TMA_COPY_ENGINE_BYTES=0" "2 COLL_SLAB=1" "4 COLL_SLAB=1"; do
  np=${run%% *}
  extra=$(echo "$run" | cut -s -d' ' -f2-)
  exact=
  [ "$np" -gt 2 ] && exact=--exact
  echo "== $np ranks: intra-node engine at every size $exact $extra"
  out=$(MPIZIP_TEST_ENV="MPIZIP_TMA_MIN_BYTES=0 MPIZIP_GPU_SHARING=concurrent MPIZIP_STATS=1 $extra" timeout 900 \
    sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' run "$np" "$prog" $exact 2>&1)
  rc=$?
  echo "$out" | grep -v "stats" | tail -n 5
  [ "$rc" = 0 ] || { echo "$out" | tail -n 30; fail "$np ranks, intra-node engine $extra"; }
  echo "$out" | grep -q "intra-node engine collectives=[1-9]" ||
    fail "$np ranks: the statistics show no collective on the intra-node engine"
  case $extra in *COPY_ENGINE*)
    echo "$out" | grep -q "runtime copies=[1-9]" ||
      fail "$np ranks, $extra: the statistics show no copies by the GPU runtime" ;;
  esac
  # Buffers carved out of one large allocation: the engine shares them as they are (an in-place
  # reduce-scatter stages its input by design, so some calls may still count).
  case $extra in *COLL_SLAB*)
    e=$(echo "$out" | grep -o "intra-node engine collectives=[0-9]*" | head -1 | cut -d= -f2)
    st=$(echo "$out" | grep -o "runtime copies=[0-9]* staged=[0-9]*" | head -1 | cut -d= -f3)
    [ -n "$e" ] && [ -n "$st" ] && [ "$st" -lt $((e / 2)) ] ||
      fail "$np ranks, $extra: $st of $e engine calls staged" ;;
  esac
done
