#!/bin/sh
# MPI's progress rule through MPIZip with device message buffers (tests/gpu/p2p_progress_device:
# tests/mpi/p2p_progress.c built with -DP2P_PROGRESS_DEVICE) on 2 and 4 ranks sharing the GPU: a
# receiver that posts its receive and then blocks in a call MPIZip passes through (MPI_Barrier, a
# blocking receive from the other rank, an allreduce of MPI_INT, MPI_Waitall on plain requests)
# while its sender sits in a blocking send; a sender that computes between MPI_Isend and MPI_Wait;
# every send mode; truncation. At the defaults (one node: CUDA IPC), and every rank its own node
# with compression forced over the MPI library, the emulated link and UCX (where built). Each run
# under a time limit: a broken rule deadlocks. Plain Open MPI cannot read device memory, so there is
# no plain run. Skipped (77) without a GPU.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/p2p_progress_device"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
forced="MPIZIP_FORCE_INTERNODE=1 MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0"
for np in 2 4; do
  for env in "" "$forced" "$forced MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=25" \
             "$forced MPIZIP_TRANSPORT=ucx"; do
    case $env in
      *ucx*) grep -q '^#define MPIZIP_HAVE_UCX 1' "$MPIZIP_BUILDDIR/config.h" || continue ;;
    esac
    echo "== $np ranks${env:+, $env}"
    MPIZIP_TEST_ENV="$env" timeout -k 20 180 \
      sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' run "$np" "$prog" ||
      fail "device buffers, $np ranks${env:+, $env} (124 or 137: no result in 180 s, a hang)"
  done
done
