#!/bin/sh
# Sets up and runs MPIZip's tests: installs missing Debian/Ubuntu packages, builds in build/
# (with CUDA when /usr/local/cuda is present), runs `make check` (unit, codec, MPI integration and
# benchmark tests, each MPI test with and without the preload), runs the MPI thread tests under
# ThreadSanitizer with the protocol forced (tests/tsan/run.sh) and the protocol, two-shot and
# fault tests under AddressSanitizer and UBSan (tests/asan/run.sh), fuzzes every parser of a peer's
# bytes (the CPU decoder, the match header and its receiver, the allreduce's hello, chunked
# payloads: tests/fuzz/run.sh) for 30 s each under AddressSanitizer and UBSan (two at a time on two
# cores; measured from the seeds, the first 30 s of a 60 s run reach 717 of its 718 edges for
# decode, 702 of 703 for match_header, all 65 for hello and all 279 for chunked, and 1730/1737,
# 1499/1502, 89/89 and 1079/1085 of its features: the second half found one edge each in two
# targets, for a minute of CI time), compiles the GPU kernels for AMD (HIP, gfx90a), then
# `make distcheck`, which builds the release tarball without CUDA, builds the library, the tools,
# the benchmarks and the quick tests' programs from it and runs the quick tests (the whole suite
# has run above; the tarball's job is to hold every file the build and the tests need, which the
# check after it makes sure of file by file: every source, header, build file and script of the
# git tree, and everything under tests/, is in the tarball). Then the same tree against MPICH in
# build-mpich/ (--with-mpi=mpich): every test that launches ranks (tests/mpi, the point-to-point
# protocol, staging, the two-shot allreduce, the transports, the OSU benchmarks), each with and
# without the preload. The unit tests, the sanitizers, fuzzing, the HIP compile and distcheck do not depend on
# the MPI library and run once, above; the Python test skips there (Debian's mpi4py is built
# against Open MPI). Under MPICH the tests' ranks yield their core while they wait rather than spin
# (tests/mpi/launcher.sh.in): they outnumber the cores. Last, the MPICH build, configured with
# --prefix build-mpich/install, is installed there, and tests/install.sh checks that installation
# as the README uses it: the installed mpizip-run (finding the library by itself), mpizip-info, and
# a program built with `pkg-config --cflags --libs mpizip` (make check runs the same test on a
# make install staged under DESTDIR, for each MPI library).
set -e
cd "$(dirname "$0")"
start=$(date +%s)
step() { echo "check.sh: $* (at $(($(date +%s) - start)) s)"; }
tools/install-deps.sh --tests
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
jobs=$(nproc 2>/dev/null || echo 2)
step build
autoreconf -fi
mkdir -p build
cd build
../configure --with-mpi=openmpi
make -j"$jobs"
step make check
make -j"$jobs" check || { cat test-suite.log; exit 1; }
step ThreadSanitizer
../tests/tsan/run.sh
step AddressSanitizer
../tests/asan/run.sh
step fuzzing
FUZZ_DIR="$PWD/fuzz" ../tests/fuzz/run.sh 30
step HIP compile
../tests/hip_compile.sh || [ $? = 77 ]
step distcheck
make -j"$jobs" distcheck DISTCHECK_CONFIGURE_FLAGS=--without-cuda \
  TESTS="tests/mpi/smoke.sh tests/unit/codec_cpu_test tests/unit/p2p_recv_test tests/readme_settings.sh osu-bench/test-osu.sh" \
  check_PROGRAMS="tests/mpi/smoke tests/unit/codec_cpu_test tests/unit/p2p_recv_test" check_LTLIBRARIES=
step tarball contents
if git -C .. rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  tarball=$(ls -t mpizip-*.tar.gz | head -1)
  tar tzf "$tarball" | sed 's|^[^/]*/||' | sort > tarball.list
  # What the build and the tests read: sources, headers, build files and scripts anywhere, and
  # everything under tests/, python/, examples/, tools/, docs/ and .ci/.
  missing=$(git -C .. ls-files | grep -v '^osu-bench/results/' |
            grep -E '\.(c|cc|cpp|h|hpp|cu|cuh|F90|f90|inc|def|sh|mk|am|in|ac|m4)$|^(tests|python|examples|tools|docs|\.ci)/' |
            sort | comm -23 - tarball.list)
  [ -z "$missing" ] || { echo "check.sh: files of the tree missing from $tarball:"; echo "$missing"; exit 1; }
fi
cd ..
step MPICH build
mkdir -p build-mpich
cd build-mpich
../configure --with-mpi=mpich --without-cuda --without-gtest --prefix="$PWD/install"
make -j"$jobs"
step MPICH make check
make -j"$jobs" check || { cat test-suite.log; exit 1; }
step "make install into a scratch prefix"
rm -rf install
make install >install.log 2>&1 || { cat install.log; exit 1; }
MPIZIP_INSTALLED_PREFIX="$PWD/install" make check TESTS=tests/install.sh ||
  { cat tests/install.log; exit 1; }
step "all tests passed (Open MPI, then MPICH)"
