#!/bin/sh
# Builds MPIZip with CUDA in a build directory of its own and runs the GPU tests (codec,
# point-to-point with device buffers on 2-4 ranks sharing the GPU, the GPU reduce, allreduce on
# device buffers on 2-4 ranks, the transports with device buffers, the other collectives with
# device buffers staged through host memory, the intra-node collectives' failure paths, the Python
# package with CuPy and PyTorch, Fortran device arrays), a
# memory-checker pass over the
# corruption and bounds tests, and the GPU codec benchmark. For the GPU machine (where libtool's m4
# files may be missing: generate configure elsewhere and bring it along):
#
#   tests/gpu/run.sh [BUILD_DIR] [LOG_DIR]
#
# BUILD_DIR defaults to build-gpu-check, LOG_DIR to BUILD_DIR/logs. The benchmark writes
# LOG_DIR/codec-h200.json (the layout of osu-bench/results/codec-h200.json). Real weights come from
# MPIZIP_REAL_WEIGHTS, else .data/real_fp32.bin in the source tree (osu-bench/data).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-gpu-check}
logs=${2:-$build/logs}
mkdir -p "$build" "$logs"

cd "$src"
[ -x configure ] || autoreconf -fi
cd "$build"
[ -f Makefile ] || "$src/configure" --with-cuda
make -j"$(nproc)" libmpizip.la tools/mpizip-info tests/gpu/codec_gpu_test tests/gpu/p2p_device \
  tests/gpu/p2p_oom tests/gpu/p2p_semantics_device tests/gpu/reduce_gpu_test tests/gpu/decode_fold_test \
  tests/gpu/allreduce_device tests/gpu/transport_device tests/gpu/coll_staged_device osu-bench/codec \
  tests/gpu/pointer_kind_test tests/gpu/tma_fault tests/gpu/p2p_progress_device

status=0
./tests/gpu/pointer_kind_test --gtest_brief=1 >"$logs/pointer_kind_test.log" 2>&1 || status=$?
echo "pointer_kind_test: exit $status (log: $logs/pointer_kind_test.log)"

./tests/gpu/codec_gpu_test --gtest_brief=1 >"$logs/codec_gpu_test.log" 2>&1 || status=$?
echo "codec_gpu_test: exit $status (log: $logs/codec_gpu_test.log)"
[ "$status" -eq 77 ] && exit 77

p2p=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/run-p2p.sh" >"$logs/p2p_device.log" 2>&1 || p2p=$?
echo "p2p_device: exit $p2p (log: $logs/p2p_device.log)"
[ "$p2p" -eq 0 ] || status=$p2p

# MPI's progress rule with device buffers: receivers blocked in calls MPIZip passes through, senders
# computing between MPI_Isend and MPI_Wait, each transport, each run time-limited.
progress=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/p2p_progress_device.sh" >"$logs/p2p_progress_device.log" 2>&1 || progress=$?
echo "p2p_progress_device: exit $progress (log: $logs/p2p_progress_device.log)"
[ "$progress" -eq 0 ] || status=$progress

# The transports with device buffers (src/transport): CUDA IPC and its mapping cache, staging
# through pinned and pageable memory, the emulated link.
transport=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src \
  sh "$src/tests/gpu/transport_device.sh" >"$logs/transport_device.log" 2>&1 || transport=$?
echo "transport_device: exit $transport (log: $logs/transport_device.log)"
[ "$transport" -eq 0 ] || status=$transport

# The GPU reduce against the CPU's, and the two-shot allreduce on device buffers (coll/).
allreduce=0
{ ./tests/gpu/reduce_gpu_test --gtest_brief=1 && ./tests/gpu/decode_fold_test --gtest_brief=1 &&
  MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
    sh "$src/tests/gpu/allreduce_device.sh"; } >"$logs/allreduce_device.log" 2>&1 || allreduce=$?
echo "allreduce_device: exit $allreduce (log: $logs/allreduce_device.log)"
[ "$allreduce" -eq 0 ] || status=$allreduce

# The other collectives with device buffers, staged through host memory (src/core/coll_staging.h).
staged=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/coll_staged_device.sh" >"$logs/coll_staged_device.log" 2>&1 || staged=$?
echo "coll_staged_device: exit $staged (log: $logs/coll_staged_device.log)"
[ "$staged" -eq 0 ] || status=$staged

# The same collectives between nodes (every rank its own node, then pretend nodes of 2): the float
# ones on the two-shot's engine, compressed by the GPU codec.
internode=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/coll_internode_device.sh" >"$logs/coll_internode_device.log" 2>&1 || internode=$?
echo "coll_internode_device: exit $internode (log: $logs/coll_internode_device.log)"
[ "$internode" -eq 0 ] || status=$internode

# The intra-node collectives when a rank's part fails or its settings differ: an MPI error on every
# rank within a bounded time, or MPIZip off for the communicator (coll/tma_coll.h, agreement.h).
fault=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/tma_fault.sh" >"$logs/tma_fault.log" 2>&1 || fault=$?
echo "tma_fault: exit $fault (log: $logs/tma_fault.log)"
[ "$fault" -eq 0 ] || status=$fault

# The Python package (python/mpizip) with CuPy and PyTorch device arrays, and
# examples/weight_sync.py; skipped (77, not a failure) where mpi4py, CuPy and PyTorch are missing.
python=0
MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
  sh "$src/tests/gpu/python_device.sh" >"$logs/python_device.log" 2>&1 || python=$?
echo "python_device: exit $python (log: $logs/python_device.log)"
[ "$python" -eq 0 ] || [ "$python" -eq 77 ] || status=$python

# Fortran device arrays (cudaMalloc through iso_c_binding) with use mpi and use mpi_f08; skipped
# (77, not a failure) where configure found no MPI Fortran compiler and the programs are not there.
# On a GPU machine with the MPI library's Fortran libraries but no compiler, build them elsewhere
# (`make gpu-fortran` in a build of the same MPI library) and copy them into BUILD_DIR/tests/gpu.
fortran=0
{ make gpu-fortran && MPIZIP_BUILDDIR=$build MPIZIP_SRCDIR=$src MPIZIP_LIB=$build/.libs/libmpizip.so \
    sh "$src/tests/gpu/fortran_device.sh"; } >"$logs/fortran_device.log" 2>&1 || fortran=$?
echo "fortran_device: exit $fortran (log: $logs/fortran_device.log)"
[ "$fortran" -eq 0 ] || [ "$fortran" -eq 77 ] || status=$fortran

if command -v compute-sanitizer >/dev/null 2>&1; then
  MPIZIP_GPU_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 3 \
    ./tests/gpu/codec_gpu_test --gtest_brief=1 \
    --gtest_filter='*Corrupt*:*Unaligned*:*Batches*:*Boundaries*:*EveryEncoder*' >"$logs/memcheck.log" 2>&1 || status=$?
  compute-sanitizer --tool memcheck --error-exitcode 3 ./tests/gpu/decode_fold_test --gtest_brief=1 \
    --gtest_filter='*BadStreams*:*ChecksumsStored*' >>"$logs/memcheck.log" 2>&1 || status=$?
  echo "memcheck: $(tail -1 "$logs/memcheck.log")"
fi

: "${MPIZIP_REAL_WEIGHTS:=$src/.data/real_fp32.bin}"
export MPIZIP_REAL_WEIGHTS
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$src" diff --quiet 2>/dev/null || commit="$commit-dirty"
./osu-bench/codec --min=256K --max=1G --json="$logs/codec-h200.json" --commit="$commit" | tee "$logs/codec.log"
exit "$status"
