#!/bin/sh
# Datatype pairs of the same signature (tests/mpi/dtype_pairs.c) with every buffer in device memory,
# on ranks sharing a GPU: MPIZip at its defaults on 2 and 4 ranks (the protocol on for every
# datatype: every rank has a GPU; CUDA IPC between the ranks), and on 2 with every rank its own
# node and compression forced (the GPU codec for contiguous elements; derived datatypes packed
# through host copies). Plain Open MPI cannot read
# device memory, so there is no plain run. Skipped (77) without a GPU.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/dtype_pairs_device"
"$prog" >/dev/null 2>&1
[ $? = 77 ] && exit 77
for np in 2 4; do
  run_mpi mpizip "$np" "$prog" || fail "MPIZip, device buffers, $np ranks"
done
MPIZIP_TEST_ENV="MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0 MPIZIP_HOST_COMPRESS=1" \
  run_mpi mpizip 2 "$prog" || fail "MPIZip, device buffers, every rank its own node, compression forced"
