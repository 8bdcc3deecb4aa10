#!/bin/sh
# The TMA intra-node collectives on a GPU machine: builds MPIZip with CUDA (only what these need),
# then runs the phases named on the command line (default: test):
#
#   test      tests/gpu/tma_coll.sh's cases: 2, 3, 4 ranks sharing the GPU; flags, host barrier and
#             the SM path (TMA_TEST_ARGS=--small for a short run; TMA_TEST_BIG_NP="2 4" adds a 1 GiB
#             allreduce on those rank counts)
#   sanitize  compute-sanitizer memcheck and racecheck on a small case, 2 ranks
#   sweep     osu-bench/tma_sweep.sh: 2 and 4 ranks, 1, 2, 4, 8, 16, 32 CTAs, 1 KiB..1 GiB
#   gemm      osu-bench/gemm_overlap.sh: GEMM slowdown beside the TMA path and the SM path
#   mps-on    start the CUDA MPS daemon for the phases after it (mps-off stops it)
#
#   tests/gpu/run-tma.sh BUILD_DIR LOG_DIR PHASE...
#
# Logs and results go to LOG_DIR; a one-line summary per phase goes to stdout.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-gpu-tma}
logs=${2:-$build/logs}
shift 2 2>/dev/null || true
phases=${*:-test}
mkdir -p "$build" "$logs"
cd "$build" || exit 1
[ -f Makefile ] || "$src/configure" --with-cuda >"$logs/configure.log" 2>&1 || { echo "configure failed"; tail -20 "$logs/configure.log"; exit 1; }
t0=$(date +%s)
make -j"$(nproc)" libmpizip.la tests/gpu/tma_coll tests/gpu/tma_plan_test osu-bench/tma_sweep \
  osu-bench/gemm_overlap >"$logs/build.log" 2>&1 || { echo "build failed"; grep -E "error" "$logs/build.log" | head -20; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export MPIZIP_BUILDDIR="$build" MPIZIP_SRCDIR="$src" MPIZIP_LIB="$build/.libs/libmpizip.so"
. "$src/tests/mpi/lib.sh"
status=0
for phase in $phases; do
  t0=$(date +%s)
  case $phase in
    test)
      ./tests/gpu/tma_plan_test >"$logs/tma_plan_test.log" 2>&1 || status=1
      sh "$src/tests/gpu/tma_coll.sh" >"$logs/tma_coll.log" 2>&1
      rc=$?; [ $rc -eq 0 ] || status=$rc
      echo "test: exit $rc, $(( $(date +%s) - t0 )) s"; grep -E "ranks,|FAIL|element" "$logs/tma_coll.log" | head -24 ;;
    sanitize)
      for tool in memcheck racecheck; do
        sync=flags; [ $tool = racecheck ] && sync=host
        MPIZIP_TEST_ENV="MPIZIP_TMA_MIN_BYTES=0 MPIZIP_TMA_SYNC=$sync" timeout "${TMA_TIMEOUT:-150}" sh -c ". '$src/tests/mpi/lib.sh'; run_mpi mpizip 2 compute-sanitizer --tool $tool --error-exitcode 9 ./tests/gpu/tma_coll --small" \
          >"$logs/sanitize-$tool.log" 2>&1
        rc=$?; [ $rc -eq 0 ] || status=$rc
        echo "sanitize $tool: exit $rc"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|tma_coll:" "$logs/sanitize-$tool.log" | head -4
      done ;;
    mps-on)
      # The CUDA MPS daemon, so that the ranks sharing the GPU run at once instead of time-sliced
      # (started for the phases that follow, stopped by mps-off or at the end).
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mpizip-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mpizip-mps-log
      mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
      nvidia-cuda-mps-control -d && mps=1 && echo "mps: on" ;;
    mps-off)
      [ "${mps:-0}" = 1 ] && { echo quit | nvidia-cuda-mps-control; sleep 1; mps=0; echo "mps: off"; }
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
    sweep)
      out="$logs/tma-sweep$([ "${mps:-0}" = 1 ] && echo -mps).jsonl"
      sh "$src/osu-bench/tma_sweep.sh" "$build" "$out" >"$logs/tma-sweep.log" 2>&1 || status=1
      echo "sweep: $(wc -l <"$out") points, $(( $(date +%s) - t0 )) s" ;;
    gemm)
      sh "$src/osu-bench/gemm_overlap.sh" "$build" "$logs/gemm-overlap.jsonl" >"$logs/gemm-overlap.log" 2>&1 || status=1
      cat "$logs/gemm-overlap.jsonl" ;;
  esac
done
[ "${mps:-0}" = 1 ] && { echo quit | nvidia-cuda-mps-control; sleep 1; }
exit $status
