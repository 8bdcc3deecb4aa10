#!/bin/sh
# MPI point-to-point semantics with device buffers: tests/gpu/p2p_semantics_device (the source of
# tests/mpi/p2p_semantics.c with -DP2P_DEVICE_BUFFERS: every message buffer in cudaMalloc'd memory)
# on 2, 3 and 4 ranks sharing the GPU, the ways tests/mpi/p2p_semantics.sh runs the host suite:
#   - without MPIZip: only where the MPI library is CUDA-aware. Plain Open MPI here is not (the
#     benchmarks' note), so the program skips itself (exit 77, "skipped") and so does this run;
#   - with MPIZip at its defaults (ranks of one node: device payloads move raw, over CUDA IPC);
#   - with MPIZip and compression forced (MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1: every rank
#     its own node, so device buffers are compressed on the GPU, every message);
# and with MPIZIP_FORCE_INTERNODE=1 alone (compressed at the default threshold) at 1 GiB on 2
# ranks. Payloads bit-exact, statuses, counts, truncation, cancel, wildcards, ordering, probes,
# persistent requests (the program checks). Called by tests/gpu/run-p2p.sh; skipped (77) where
# there is no GPU.
#
#   MPIZIP_BUILDDIR=... MPIZIP_SRCDIR=... MPIZIP_LIB=... sh tests/gpu/run-p2p-semantics.sh
#
# MPIZIP_P2P_SEMANTICS_MAX_BYTES: the largest message on 2 ranks (default 1073741824; the forced
# compression run takes at most 268435456, as the host suite); 3 and 4 ranks go to 16 MiB.
# MPIZIP_P2P_SEMANTICS_TIMEOUT: the limit of one run in seconds (default 600).
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/p2p_semantics_device"
[ -x "$prog" ] || fail "$prog is not built (make tests/gpu/p2p_semantics_device)"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
big=${MPIZIP_P2P_SEMANTICS_MAX_BYTES:-1073741824}
limit=${MPIZIP_P2P_SEMANTICS_TIMEOUT:-600}
forced_max=268435456
[ "$big" -lt "$forced_max" ] && forced_max=$big

# run MODE "SETTINGS" NP MAX_BYTES: one mpirun of the program under `timeout`; its exit status
# (77: the program skipped itself).
run() {
  r_mode=$1 r_settings=$2 r_np=$3 r_max=$4
  echo "== $r_np ranks, up to $r_max bytes: $r_mode${r_settings:+, $r_settings}"
  MPIZIP_TEST_ENV="$r_settings" timeout -k 20 "$limit" \
    sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi "$@"' run "$r_mode" "$r_np" "$prog" "$r_max"
  r_rc=$?
  case $r_rc in
    124 | 137) echo "FAIL: no result after $limit s (hang?)" >&2 ;;
  esac
  return $r_rc
}

for np in 2 3 4; do
  max=$([ "$np" = 2 ] && echo "$big" || echo 16777216)
  fmax=$([ "$np" = 2 ] && echo "$forced_max" || echo 16777216)
  # Without MPIZip: the MPI library must read device memory itself, which plain Open MPI cannot.
  run plain "" "$np" "$max"
  rc=$?
  [ "$rc" -eq 77 ] && echo "   skipped: the MPI library is not CUDA-aware (device buffers need MPIZip)"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || fail "plain, $np ranks (exit $rc)"
  run mpizip "" "$np" "$max" || fail "MPIZip, $np ranks"
  run mpizip "MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1" "$np" "$fmax" ||
    fail "MPIZip with compression forced (MPIZIP_MIN_BYTES=0 MPIZIP_GPU_MIN_BYTES=0 MPIZIP_FORCE_INTERNODE=1), $np ranks"
done
run mpizip "MPIZIP_FORCE_INTERNODE=1" 2 "$big" ||
  fail "MPIZip, every rank its own node (MPIZIP_FORCE_INTERNODE=1), 2 ranks, $big bytes"
echo "p2p_semantics_device: all runs passed"
