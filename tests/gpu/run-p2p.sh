#!/bin/sh
# Device-buffer point-to-point under MPIZip on 2, 3 and 4 ranks sharing the GPU: up to 1 GB on 2
# ranks, compressed with the default threshold and with compression forced on every message.
# Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/p2p_device"
"$prog" >/dev/null 2>&1; [ $? = 77 ] && exit 77
max=${MPIZIP_P2P_MAX_BYTES:-1073741824}
for np in 2 3 4; do
  m=$([ "$np" = 2 ] && echo "$max" || echo 16777216)
  run_mpi mpizip "$np" "$prog" "$m" || fail "$np ranks"
  MPIZIP_TEST_ENV="MPIZIP_MIN_BYTES=0" run_mpi mpizip "$np" "$prog" "$m" || fail "$np ranks, forced"
done
