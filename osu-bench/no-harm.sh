#!/bin/bash
# no-harm: the paths MPIZip does not speed up, measured the way standard clients run them (OSU's
# MPI_CHAR, -c validation, device and host buffers, with and without MPS), each MPIZip figure beside
# its reference from the same run (osu-bench/results/README.md, "No harm"). For the GPU machine:
#
#   osu-bench/no-harm.sh BUILD_DIR OUT_DIR [mps|nomps|both] [all|p2p]
#
# p2p runs the point-to-point rows only, with two more: host latency without the progress thread
# (MPIZIP_PROGRESS_THREAD=off: no MPI_THREAD_MULTIPLE), and host latency and device bandwidth with
# every message up to 64 KiB bare (MPIZIP_BARE_BYTES=65536).
#
# References: plain MPI where it runs (the benchmarks stage device buffers through pinned host
# memory themselves when the MPI library cannot read them); cudaMemcpy device to device for
# bandwidth (copy_bw); a cudaMemcpy round trip and staging by hand for small device messages
# (staged_latency); MPIZip with MPIZIP_TMA=off for the intra-node collectives. One compare JSON per
# row in OUT_DIR, named after the row and nomps/mps.
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
which=${3:-both}
only=${4:-all}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export MPIZIP_BUILDDIR=$build MPIZIP_LIB=$build/.libs/libmpizip.so
b=$build/osu-bench
cmp=$src/osu-bench/compare
mpirun_flags=(--allow-run-as-root --oversubscribe)

rows() {  # rows TAG: every row, under the MPS state TAG
  local t=$1
  "$b/copy_bw" -m 4194304:67108864 -i 20 -x 3 >"$out/copy_bw_$t.txt" 2>&1
  mpirun "${mpirun_flags[@]}" -np 2 "$b/staged_latency" -m 1:65536 -i 400 >"$out/staged_latency_$t.txt" 2>&1
  "$cmp" --reps 3 --json "$out/bw_cuda_char_$t.json" -- osu_bw -d cuda -T char -c \
    -m 4194304:67108864 -i 20 -x 3 -W 16 --data normal >"$out/bw_cuda_char_$t.txt" 2>&1
  "$cmp" --reps 3 --json "$out/lat_cuda_char_$t.json" -- osu_latency -d cuda -T char -c \
    -m 1:65536 -i 300 -x 30 --data normal >"$out/lat_cuda_char_$t.txt" 2>&1
  "$cmp" --reps 3 --json "$out/lat_host_char_$t.json" -- osu_latency -d host -T char \
    -m 1:65536 -i 3000 -x 300 --data normal >"$out/lat_host_char_$t.txt" 2>&1
  "$cmp" --reps 3 --json "$out/bw_host_char_$t.json" -- osu_bw -d host -T char \
    -m 1:64 -i 2000 -x 200 -W 64 --data normal >"$out/bw_host_char_$t.txt" 2>&1
  # The same message rate of float.
  "$cmp" --reps 3 --json "$out/bw_host_float_$t.json" -- osu_bw -d host -T float \
    -m 4:64 -i 2000 -x 200 -W 64 --data normal >"$out/bw_host_float_$t.txt" 2>&1
  if [ "$only" = p2p ]; then
    "$cmp" --reps 3 --env "MPIZIP_PROGRESS_THREAD=off" --json "$out/lat_host_char_nothread_$t.json" -- \
      osu_latency -d host -T char -m 1:65536 -i 3000 -x 300 --data normal \
      >"$out/lat_host_char_nothread_$t.txt" 2>&1
    "$cmp" --reps 3 --env "MPIZIP_BARE_BYTES=65536" --json "$out/lat_host_char_bare64k_$t.json" -- \
      osu_latency -d host -T char -m 1:65536 -i 3000 -x 300 --data normal \
      >"$out/lat_host_char_bare64k_$t.txt" 2>&1
    "$cmp" --reps 3 --env "MPIZIP_BARE_BYTES=65536" --json "$out/bw_cuda_char_bare64k_$t.json" -- \
      osu_bw -d cuda -T char -c -m 4194304:67108864 -i 20 -x 3 -W 16 --data normal \
      >"$out/bw_cuda_char_bare64k_$t.txt" 2>&1
    return
  fi
  for c in allreduce allgather; do
    "$cmp" --reps 3 --baseline "MPIZIP_TMA=off" --json "$out/${c}_cuda_float_$t.json" -- \
      "osu_$c" -d cuda -T float -c -m 1024:67108864 -i 20 -x 3 --data normal \
      >"$out/${c}_cuda_float_$t.txt" 2>&1
  done
  for c in bcast allgather alltoall; do
    "$cmp" --reps 3 --json "$out/${c}_cuda_char_$t.json" -- "osu_$c" -d cuda -T char -c \
      -m 1:8192 -i 200 -x 20 --data normal >"$out/${c}_cuda_char_$t.txt" 2>&1
  done
}

if [ "$which" = nomps ] || [ "$which" = both ]; then rows nomps; fi
if [ "$which" = mps ] || [ "$which" = both ]; then
  "$src/osu-bench/with-mps" bash -c "$(declare -f rows); $(declare -p b cmp out mpirun_flags only); rows mps"
fi
