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
flags="-fsanitize=thread -g -O1"
[ -f Makefile ] || "$src/configure" --without-cuda --disable-static CFLAGS="$flags" \
  CXXFLAGS="$flags" LDFLAGS="-fsanitize=thread" > configure.log 2>&1 || { cat configure.log; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" libmpizip.la > make.log 2>&1 || { tail -50 make.log; exit 1; }
make -j"$jobs" tests/mpi/threads tests/mpi/mt_probe >> make.log 2>&1 || { tail -50 make.log; exit 1; }
supp="$src/tests/tsan/suppressions.txt"
export TSAN_OPTIONS="suppressions=$supp halt_on_error=1 exitcode=66 report_signal_unsafe=0"
# Shared memory between the two ranks (the TCP transport is not what these tests exercise).
export OMPI_MCA_btl=self,vader
export MPIZIP_BUILDDIR="$dir"
export MPIZIP_LIB="$dir/.libs/libmpizip.so"
# The preloaded library needs the TSan runtime loaded first.
tsan_rt=$(gcc -print-file-name=libtsan.so)
. "$src/tests/mpi/lib.sh"
for extra in "MPIZIP_PROGRESS_THREAD=off" "MPIZIP_PROGRESS_THREAD=on"; do
  for prog in threads mt_probe; do
    MPIZIP_TEST_ENV="TSAN_OPTIONS MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 $extra" \
      run_mpi_preload "$tsan_rt:$MPIZIP_LIB" 2 "$dir/tests/mpi/$prog" ||
      fail "ThreadSanitizer: $prog with the protocol forced ($extra)"
  done
done
echo "tsan: no reports"
