#!/bin/sh
# Device buffers through the transports (tests/gpu/transport_device.cc) on 2, 3 and 4 ranks sharing
# the GPU machine. Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/transport_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
for np in 2 3 4; do
  run_mpi plain "$np" "$prog" || fail "$np ranks"
done
