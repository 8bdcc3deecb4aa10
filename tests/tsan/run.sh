#!/bin/sh
# ThreadSanitizer build of MPIZip and its MPI thread tests (tests/mpi/threads, tests/mpi/mt_probe),
# run with the protocol forced on (host compression, every size) with and without the progress
# thread: no report may appear. Suppressions (tests/tsan/suppressions.txt) cover the MPI stack
# beneath only, each justified there. Run from a build directory: `../tests/tsan/run.sh`; it builds
# in ./tsan.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
dir="$PWD/tsan"
mkdir -p "$dir"
cd "$dir"
# The sanitizer goes into the compiler drivers, so that libtool's link of the shared library keeps
# it (libtool drops -fsanitize from LDFLAGS there) and libmpizip.so carries its own runtime.
[ -f Makefile ] || "$src/configure" --without-cuda --disable-static CFLAGS="-g -O1" CXXFLAGS="-g -O1" \
  MPICC="${MPICC:-mpicc} -fsanitize=thread" MPICXX="${MPICXX:-mpicxx} -fsanitize=thread" \
  > configure.log 2>&1 || { cat configure.log; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" libmpizip.la > make.log 2>&1 || { tail -50 make.log; exit 1; }
make -j"$jobs" tests/mpi/threads tests/mpi/mt_probe >> make.log 2>&1 || { tail -50 make.log; exit 1; }
supp="$src/tests/tsan/suppressions.txt"
# history_size=7: the previous access of a report comes with its stack.
export TSAN_OPTIONS="suppressions=$supp halt_on_error=1 exitcode=66 report_signal_unsafe=0 history_size=7"
# Shared memory between the two ranks (the TCP transport is not what these tests exercise).
export OMPI_MCA_btl=self,vader
# UCX's memory hooks (libucm) patch madvise, which glibc calls on a thread's exit, after TSan has
# dropped the thread's state: TSan then crashes inside the hook. MPIZip's tests need no hooks.
export UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
export MPIZIP_BUILDDIR="$dir"
export MPIZIP_LIB="$dir/.libs/libmpizip.so"
. "$src/tests/mpi/lib.sh"
for mode in "MPIZIP_PROGRESS_THREAD=off" "MPIZIP_PROGRESS_THREAD=on"; do
  for prog in threads mt_probe; do
    MPIZIP_TEST_ENV="TSAN_OPTIONS UCX_MEM_EVENTS UCX_MEM_MALLOC_HOOKS UCX_MEM_MMAP_HOOK_MODE MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 $mode" \
      run_mpi mpizip 2 "$dir/tests/mpi/$prog" ||
      fail "ThreadSanitizer: $prog with the protocol forced ($mode)"
  done
done
echo "tsan: no reports"
