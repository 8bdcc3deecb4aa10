#!/bin/sh
# Device-buffer point-to-point under MPIZip on 2, 3 and 4 ranks sharing the GPU, through every
# path: same node (CUDA IPC, uncompressed), and with every rank its own node (compressed at the
# default threshold and on every message, split-send, encode-then-send and chunked, over the MPI library and
# over the emulated link). Up to 1 GB on 2 ranks. Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/p2p_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
max=${MPIZIP_P2P_MAX_BYTES:-1073741824}
for np in 2 3 4; do
  big=$([ "$np" = 2 ] && echo "$max" || echo 16777216)
  for env in "" \
             "MPIZIP_FORCE_INTERNODE=1" \
             "MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0" \
             "MPIZIP_FORCE_INTERNODE=1 MPIZIP_P2P_PIPELINE=encode-then-send" \
             "MPIZIP_FORCE_INTERNODE=1 MPIZIP_P2P_PIPELINE=chunked" \
             "MPIZIP_FORCE_INTERNODE=1 MPIZIP_P2P_PIPELINE=chunked MPIZIP_CHUNK_BYTES=192K MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0" \
             "MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=47"; do
    m=$big
    [ -n "$env" ] && [ "$m" -gt 67108864 ] && [ "$env" != "MPIZIP_FORCE_INTERNODE=1" ] && m=67108864
    echo "== $np ranks, up to $m bytes: ${env:-defaults}"
    MPIZIP_TEST_ENV="$env" timeout 300 sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
      run "$np" "$prog" "$m" || fail "$np ranks, ${env:-defaults}"
  done
done
# Exhausted device memory and tiny pools: bit-exact through the fallbacks, one notice each.
sh "$MPIZIP_SRCDIR/tests/gpu/run-p2p-oom.sh" || fail "memory shortage (tests/gpu/run-p2p-oom.sh)"
# The MPI point-to-point semantics suite (tests/mpi/p2p_semantics.c) on device buffers, up to 1 GiB.
sh "$MPIZIP_SRCDIR/tests/gpu/run-p2p-semantics.sh" ||
  fail "point-to-point semantics on device buffers (tests/gpu/run-p2p-semantics.sh)"
