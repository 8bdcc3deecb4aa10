#!/bin/sh
# The intra-node collectives' sweep (osu-bench/tma_sweep.cc) with MPIZip preloaded: every rank
# count of TMA_SWEEP_RANKS (2 4) and CTA count of TMA_SWEEP_CTAS (1 2 4 8 16 32, through
# MPIZIP_TMA_CTAS), sizes TMA_SWEEP_MIN..TMA_SWEEP_MAX (1K..1G, powers of two). Appends the JSON
# lines to OUT; osu-bench/tma_sweep_table.py turns them into the results file and the tuning table.
#
#   osu-bench/tma_sweep.sh BUILD_DIR OUT
set -u
build=$1; out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
export MPIZIP_LIB="$build/.libs/libmpizip.so"
. "$src/tests/mpi/lib.sh"
: >"$out"
for np in ${TMA_SWEEP_RANKS:-2 4}; do
  for ctas in ${TMA_SWEEP_CTAS:-1 2 4 8 16 32}; do
    MPIZIP_TEST_ENV="MPIZIP_TMA_MIN_BYTES=0 MPIZIP_TMA_CTAS=$ctas ${TMA_SWEEP_ENV:-}" run_mpi mpizip "$np" \
      "$build/osu-bench/tma_sweep" --ctas "$ctas" --min "${TMA_SWEEP_MIN:-1K}" \
      --max "${TMA_SWEEP_MAX:-1G}" --time "${TMA_SWEEP_TIME:-0.03}" >>"$out" || echo "np $np ctas $ctas failed" >&2
  done
done
