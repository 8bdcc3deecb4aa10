#!/bin/sh
# AddressSanitizer and UBSan build of MPIZip, and the MPI tests of its protocol and of its failure
# paths under it: point-to-point semantics with every message through the protocol (3 ranks, host
# compression forced, every datatype), the two-shot allreduce (4 ranks, compressed, with mismatched
# arguments), and the faults (tests/mpi/faults.sh: a send failing after its match message, a rank's
# part of an allreduce failing and the collective drained on 2 ranks, a rank dying), and operations
# that complete after their communicator is freed (tests/mpi/lifetimes.c), and receives that are
# the MPI library's own requests (tests/mpi/plain_landing.c). A report fails the run.
# Run from a build directory: `../tests/asan/run.sh`; it builds in ./asan.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
dir="$PWD/asan"
mkdir -p "$dir"
cd "$dir"
# The sanitizers go into the compiler drivers, so that libtool's link of the shared library keeps
# them (as tests/tsan/run.sh does).
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
[ -f Makefile ] || "$src/configure" --without-cuda --disable-static CFLAGS="-g -O1" CXXFLAGS="-g -O1" \
  MPICC="${MPICC:-mpicc} $san" MPICXX="${MPICXX:-mpicxx} $san" \
  > configure.log 2>&1 || { cat configure.log; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
make -j"$jobs" libmpizip.la tools/mpizip-info > make.log 2>&1 || { tail -50 make.log; exit 1; }
make -j"$jobs" tests/mpi/p2p_semantics tests/mpi/faults tests/mpi/agreement tests/coll/allreduce_test \
  tests/mpi/lifetimes tests/mpi/plain_landing \
  >> make.log 2>&1 || { tail -50 make.log; exit 1; }
# The library is instrumented (else "no reports" would say nothing).
nm -D .libs/libmpizip.so | grep -q __asan_report || { echo "asan: libmpizip.so is not instrumented"; exit 1; }
# The sanitizers' runtimes first in every rank (the preloaded library needs them before the
# program's own libraries); leaks are not checked (the MPI library's own allocations at exit).
cc=$(echo "${MPICC:-mpicc}" | cut -d' ' -f1)
runtimes="$($cc -print-file-name=libasan.so):$($cc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0 abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
export MPIZIP_BUILDDIR="$dir" MPIZIP_SRCDIR="$src"
export MPIZIP_LIB="$runtimes:$dir/.libs/libmpizip.so"
. "$src/tests/mpi/lib.sh"
env="ASAN_OPTIONS UBSAN_OPTIONS MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_BARE_BYTES=0"
MPIZIP_TEST_ENV="$env" run_mpi mpizip 3 "$dir/tests/mpi/p2p_semantics" 4000000 ||
  fail "AddressSanitizer: p2p_semantics, 3 ranks, protocol forced"
MPIZIP_TEST_ENV="$env MPIZIP_FORCE_INTERNODE=1 MPIZIP_ALLREDUCE_MIN_BYTES=0" \
  run_mpi mpizip 4 "$dir/tests/coll/allreduce_test" --twoshot-from 0 --mismatch ||
  fail "AddressSanitizer: two-shot allreduce, 4 ranks, compressed"
# Receives that are the MPI library's own requests, looked at when they complete (plain and match
# messages, every completion call, a freed request going on in the background).
MPIZIP_TEST_ENV="ASAN_OPTIONS UBSAN_OPTIONS MPIZIP_PROTOCOL=on MPIZIP_STATS=1" \
  run_mpi mpizip 2 "$dir/tests/mpi/plain_landing" ||
  fail "AddressSanitizer: plain_landing, protocol on"
# Operations completing after MPI_Comm_free (tests/mpi/lifetimes.c): the two-shot's completion,
# then the point-to-point counters of MPIZIP_STATS=1, never into the freed communicator's state.
forced="MPIZIP_PROTOCOL=on MPIZIP_ALLREDUCE=twoshot MPIZIP_FORCE_INTERNODE=1"
MPIZIP_TEST_ENV="$env $forced" run_mpi mpizip 2 "$dir/tests/mpi/lifetimes" iallreduce ||
  fail "AddressSanitizer: iallreduce on a freed communicator"
MPIZIP_TEST_ENV="$env $forced MPIZIP_STATS=1" run_mpi mpizip 2 "$dir/tests/mpi/lifetimes" p2p ||
  fail "AddressSanitizer: messages on a freed communicator, MPIZIP_STATS=1"
# The allreduce faults on 2 ranks (the 4-rank ones run in make check, without the sanitizers).
FAULTS_TIMEOUT=120 FAULTS_ALLREDUCE_RANKS=2 sh "$src/tests/mpi/faults.sh" ||
  fail "AddressSanitizer: faults"
echo "asan: no reports"
