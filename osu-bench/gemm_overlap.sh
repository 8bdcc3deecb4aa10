#!/bin/sh
# GEMM overlap (osu-bench/gemm_overlap.cc) on 2 ranks sharing the GPU with MPIZip preloaded: the
# TMA path at 8 CTAs, then the SM load/store path at 8, 16 and 32 CTAs (to find the one with the
# TMA path's allreduce bandwidth). Appends the JSON lines to OUT.
#
#   osu-bench/gemm_overlap.sh BUILD_DIR OUT
set -u
build=$1; out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
export MPIZIP_LIB="$build/.libs/libmpizip.so"
. "$src/tests/mpi/lib.sh"
: >"$out"
for cfg in "auto 8" "sm 8" "sm 16" "sm 32"; do
  set -- $cfg
  MPIZIP_TEST_ENV="MPIZIP_TMA=$1 MPIZIP_TMA_CTAS=$2 ${GEMM_ENV:-}" run_mpi mpizip "${GEMM_RANKS:-2}" \
    "$build/osu-bench/gemm_overlap" --label "$1-$2ctas" --bytes $((64 << 20)) >>"$out" ||
    echo "$cfg failed" >&2
done
