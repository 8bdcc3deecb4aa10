#!/bin/bash
# OSU Micro-Benchmarks 7.4's own programs, plain MPI against MPIZip preloaded (osu-bench/compare:
# alternating runs, medians), the way OSU's users run them: MPI_CHAR by default, host buffers in a
# job with a GPU, and device buffers where the MPI library beneath cannot read them (plain MPI then
# has no figure: MPIZip's alone is written). For the GPU machine:
#
#   osu-bench/osu74.sh BUILD_DIR OSU_SOURCE_DIR OUT_DIR [mps|nomps|both] [REPS]
#
# OSU_SOURCE_DIR is an unpacked OSU 7.4 release (fetched, never committed); it is built in
# OUT_DIR/osu with CUDA. One compare JSON and table per row in OUT_DIR, named after the row and
# nomps/mps.
set -uo pipefail
build=${1:?build dir}
osu_src=${2:?OSU 7.4 source dir}
out=${3:?output dir}
which=${4:-both}
reps=${5:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/osu"
export MPIZIP_BUILDDIR=$build MPIZIP_LIB=$build/.libs/libmpizip.so
cmp=$src/osu-bench/compare

# CUDA 13 changed cudaMemPrefetchAsync; osu74_cuda13.h adapts OSU 7.4's one call to it (at make
# time only: configure's link tests must see the plain headers).
if [ ! -x "$out/osu/c/mpi/pt2pt/standard/osu_latency" ]; then
  (cd "$out/osu" && "$osu_src/configure" CC=mpicc CXX=mpicxx --enable-cuda \
      --with-cuda-include=/usr/local/cuda/include --with-cuda-libpath=/usr/local/cuda/lib64 \
      >configure.log 2>&1 &&
   make -j"$(nproc)" CFLAGS="-O2 -I/usr/local/cuda/include -include $src/osu-bench/osu74_cuda13.h" \
      >make.log 2>&1) ||
    { tail -n 30 "$out/osu/configure.log"; tail -n 30 "$out/osu/make.log"; exit 1; }
fi
pt=$out/osu/c/mpi/pt2pt/standard
coll=$out/osu/c/mpi/collective/blocking

rows() {  # rows TAG
  local t=$1
  "$cmp" --reps "$reps" --json "$out/lat_host_char_$t.json" -- "$pt/osu_latency" \
    -m 1:4194304 -i 2000 -x 200 >"$out/lat_host_char_$t.txt" 2>&1
  "$cmp" --reps "$reps" --json "$out/lat_host_float_$t.json" -- "$pt/osu_latency" -T mpi_float \
    -m 4:4194304 -i 2000 -x 200 >"$out/lat_host_float_$t.txt" 2>&1
  "$cmp" --reps "$reps" --json "$out/bw_host_char_$t.json" -- "$pt/osu_bw" \
    -m 1:4194304 -i 200 -x 20 >"$out/bw_host_char_$t.txt" 2>&1
  "$cmp" --reps "$reps" --json "$out/rate_host_char_$t.json" -- "$pt/osu_bw" -W 64 \
    -m 1:65536 -i 500 -x 50 >"$out/rate_host_char_$t.txt" 2>&1
  "$cmp" --reps "$reps" --json "$out/allreduce_host_float_$t.json" -- "$coll/osu_allreduce" \
    -T mpi_float -m 4:67108864 -i 50 -x 5 >"$out/allreduce_host_float_$t.txt" 2>&1
  # Device buffers: the MPI library beneath cannot read them (plain MPI crashes), so MPIZip alone.
  mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_PRELOAD="$MPIZIP_LIB" "$pt/osu_latency" \
    -d cuda D D -m 1:65536 -i 500 -x 50 >"$out/lat_cuda_char_$t.txt" 2>&1
}

if [ "$which" = nomps ] || [ "$which" = both ]; then rows nomps; fi
if [ "$which" = mps ] || [ "$which" = both ]; then
  "$src/osu-bench/with-mps" bash -c "$(declare -f rows); $(declare -p pt coll cmp out reps); rows mps"
fi
