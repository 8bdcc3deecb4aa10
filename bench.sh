#!/bin/sh
# The main job: sets up and builds MPIZip, fetches realistic data (trained weights), then runs
# osu_bw and osu_latency plain and with MPIZip preloaded, side by side, 2 ranks, and prints the
# tables. Device buffers when a GPU is visible (then also the compressed inter-node path over an
# emulated 47 GB/s link), host buffers otherwise. Results land in build/bench-results/ (JSON and a
# plot).
set -e
cd "$(dirname "$0")"
top=$(pwd)
tools/install-deps.sh
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
jobs=$(nproc 2>/dev/null || echo 2)
[ -x configure ] || autoreconf -fi
mkdir -p build
cd build
[ -f Makefile ] || ../configure
make -j"$jobs"

MPIZIP_REAL_WEIGHTS=$("$top/osu-bench/data/fetch-real-weights.sh" "$PWD/data")
export MPIZIP_REAL_WEIGHTS
export MPIZIP_LIB="$PWD/.libs/libmpizip.so"
where="-d host"
if ./tools/mpizip-info | grep -q "^  GPU 0"; then where="-d cuda"; fi
out="$PWD/bench-results"
mkdir -p "$out"
echo "== osu_bw $where, bf16, trained weights: plain MPI vs MPIZip =="
"$top/osu-bench/compare" --reps 5 --json "$out/bw.json" --plot "$out/bw.png" -- \
  ./osu-bench/osu_bw $where -T bf16 --data real -m 1024:8388608 -i 20 -x 5 -W 16
echo "== osu_latency $where, bf16, trained weights: plain MPI vs MPIZip =="
"$top/osu-bench/compare" --reps 5 --json "$out/latency.json" -- \
  ./osu-bench/osu_latency $where -T bf16 --data real -m 8:1048576 -i 1000 -x 100
if [ "$where" = "-d host" ]; then
  # No GPU: host compression on a slow network is measured over a real paced link between two
  # network-namespace nodes (osu-bench/netns_bench.sh, root). The emulated link cannot show it
  # today: an uncompressed host message is the MPI library's own and never crosses it, and a paced
  # sender that then waits in a receive MPIZip passes through holds its receiver up.
  :
else
  # A GPU: the ranks above share one node, so MPIZip moved their bytes through CUDA IPC. The
  # compressed path between nodes, on a link emulated at 47 GB/s (every rank its own node; figures
  # emulated): split-send against the same link uncompressed, the ranks' kernels running
  # concurrently through MPS where it is installed, as they would on a GPU each.
  link="MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=47"
  echo "== osu_bw -d cuda, bf16, trained weights, EMULATED 47 GB/s link: MPIZip split-send vs uncompressed =="
  "$top/osu-bench/with-mps" "$top/osu-bench/compare" --reps 3 --json "$out/bw-emulated-47.json" \
    --baseline "$link MPIZIP_P2P_PIPELINE=off" --env "$link MPIZIP_P2P_PIPELINE=split" -- \
    ./osu-bench/osu_bw -d cuda -T bf16 --data real -m 4194304:268435456 -i 5 -x 1 -W 8
fi
echo "bench.sh: results in $out"
