#!/bin/bash
# The point-to-point benchmarks of MPIZip's results (osu-bench/results/README.md), from a build tree:
#   - osu_latency, 8-byte doubles, host buffers: plain MPI vs MPIZip in a CPU-only job (GPU hidden),
#     with the protocol on (MPIZIP_HOST_COMPRESS=1), and in a job that sees a GPU (if any);
#   - osu_bw -d cuda (when a GPU is visible), bf16 on uniform, normal and real data: plain MPI
#     staging device buffers through host memory vs MPIZip with defaults (ranks of one node: CUDA
#     IPC) and with every rank its own node (MPIZIP_FORCE_INTERNODE=1: compressed on the GPU,
#     staged through pinned host memory by the MPI-library transport).
# Each comparison alternates plain and MPIZip runs (osu-bench/compare) and writes JSON to OUT_DIR.
#
# usage: cd build && ../osu-bench/p2p-suite.sh OUT_DIR [--quick]
#   MPIZIP_REAL_WEIGHTS must name the trained-weights file (osu-bench/data/fetch-real-weights.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: p2p-suite.sh OUT_DIR [--quick]}
quick=${2:-}
mkdir -p "$out"
compare="$here/compare"
lat_reps=9 bw_reps=3
[ "$quick" = --quick ] && lat_reps=3 bw_reps=1
lat="./osu-bench/osu_latency -d host -T double -m 8:8 -i 20000 -x 2000"

echo "== osu_latency 8 B double, host buffers, CPU-only job (protocol off)"
CUDA_VISIBLE_DEVICES= "$compare" --reps "$lat_reps" --json "$out/lat_cpu_only.json" -- $lat
echo "== osu_latency 8 B double, host buffers, CPU-only job, protocol on (MPIZIP_HOST_COMPRESS=1)"
CUDA_VISIBLE_DEVICES= "$compare" --reps "$lat_reps" --env "MPIZIP_HOST_COMPRESS=1" \
  --json "$out/lat_protocol_on.json" -- $lat
if ./tools/mpizip-info | grep -q "^  GPU 0"; then
  echo "== osu_latency 8 B double, host buffers, job with a GPU (protocol and progress thread on)"
  "$compare" --reps "$lat_reps" --json "$out/lat_gpu_job.json" -- $lat
  for data in uniform normal real; do
    bw="./osu-bench/osu_bw -d cuda -T bf16 --data $data -m 65536:67108864 -i 10 -x 2 -W 16"
    echo "== osu_bw -d cuda bf16 $data: same node (CUDA IPC)"
    "$compare" --reps "$bw_reps" --json "$out/bw_ipc_$data.json" -- $bw
    echo "== osu_bw -d cuda bf16 $data: every rank its own node (GPU compression, host staging)"
    "$compare" --reps "$bw_reps" --env "MPIZIP_FORCE_INTERNODE=1" \
      --json "$out/bw_internode_$data.json" -- $bw
  done
fi
echo "p2p-suite: results in $out"
