#!/bin/bash
# OSU Micro-Benchmarks 7.4's own programs, plain MPI against MPIZip preloaded (osu-bench/compare:
# alternating runs, medians), the way OSU's users run them: MPI_CHAR by default, host buffers in a
# job with a GPU, and device buffers where the MPI library beneath cannot read them (plain MPI then
# has no figure: MPIZip's alone is written). For the GPU machine:
#
#   [ROWS="lat_host_char .."] osu-bench/osu74.sh BUILD_DIR OSU_SOURCE_DIR OUT_DIR [mps|nomps|both] [REPS]
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

# One row: row NAME TAG PROGRAM ARGS... (compare's JSON and table in OUT_DIR as NAME_TAG).
row() {
  local name=$1 t=$2; shift 2
  "$cmp" --reps "$reps" --json "$out/${name}_$t.json" -- "$@" >"$out/${name}_$t.txt" 2>&1
}
# The rows of the issue "No harm": point-to-point on host buffers in MPI_CHAR and MPI_FLOAT, the
# message rate, the host collectives, and small device messages. ROWS (a space-separated subset of
# the names below) picks some; every row by default.
rows() {  # rows TAG
  local t=$1 r
  for r in ${ROWS:-lat_host_char lat_host_float bw_host_char bw_host_float rate_host_char \
      allreduce_host_float bcast_host_char allgather_host_char alltoall_host_char \
      reduce_scatter_host_float lat_cuda_char}; do
    case $r in
      lat_host_char) row $r $t "$pt/osu_latency" -m 1:4194304 -i 2000 -x 200 ;;
      lat_host_float) row $r $t "$pt/osu_latency" -T mpi_float -m 4:4194304 -i 2000 -x 200 ;;
      bw_host_char) row $r $t "$pt/osu_bw" -m 1:4194304 -i 100 -x 10 ;;
      bw_host_float) row $r $t "$pt/osu_bw" -T mpi_float -m 4:4194304 -i 100 -x 10 ;;
      rate_host_char) row $r $t "$pt/osu_bw" -W 64 -m 1:65536 -i 500 -x 50 ;;
      allreduce_host_float) row $r $t "$coll/osu_allreduce" -T mpi_float -m 4:67108864 -i 100 -x 10 ;;
      bcast_host_char) row $r $t "$coll/osu_bcast" -m 4:67108864 -i 100 -x 10 ;;
      allgather_host_char) row $r $t "$coll/osu_allgather" -m 4:67108864 -i 100 -x 10 ;;
      alltoall_host_char) row $r $t "$coll/osu_alltoall" -m 4:67108864 -i 100 -x 10 ;;
      reduce_scatter_host_float)
        row $r $t "$coll/osu_reduce_scatter" -T mpi_float -m 4:67108864 -i 100 -x 10 ;;
      # Device buffers: the MPI library beneath cannot read them (plain MPI crashes), so MPIZip
      # alone.
      lat_cuda_char)
        local i
        for i in $(seq "$reps"); do
          mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_PRELOAD="$MPIZIP_LIB" \
            "$pt/osu_latency" -d cuda -m 1:65536 -i 500 -x 50 D D
        done >"$out/${r}_$t.txt" 2>&1 ;;
      *) echo "osu74.sh: no row $r" >&2; return 2 ;;
    esac
  done
}

if [ "$which" = nomps ] || [ "$which" = both ]; then rows nomps; fi
if [ "$which" = mps ] || [ "$which" = both ]; then
  "$src/osu-bench/with-mps" bash -c "$(declare -f row rows); $(declare -p pt coll cmp out reps); ROWS='${ROWS:-}' rows mps"
fi
