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
# targets, for a minute of CI time), compiles the GPU kernels for AMD (HIP, gfx90a), then builds
# the release tarball (`make dist`) and checks it file by file: every source, header, build file
# and script of the git tree, and everything under tests/, is in it. Then the tree against MPICH,
# built from that tarball as a user gets it (unpacked read-only, configured --with-mpi=mpich
# outside it, what `make distcheck` does): every test that launches ranks (tests/mpi, the
# point-to-point protocol, staging, the two-shot allreduce, the transports, the OSU benchmarks),
# each with and without the preload. The unit tests, the sanitizers, fuzzing and the HIP compile
# do not depend on the MPI library and run once, above; the Python test skips there (Debian's
# mpi4py is built against Open MPI). Under MPICH the tests' ranks yield their core while they wait
# rather than spin (tests/mpi/launcher.sh.in): they outnumber the cores. Last, the MPICH build is
# installed into a scratch prefix, and tests/install.sh checks that installation as the README
# uses it: the installed mpizip-run (finding the library by itself), mpizip-info, and a program
# built with `pkg-config --cflags --libs mpizip` (make check runs the same test on a make install
# staged under DESTDIR, for each MPI library); `make uninstall` must leave no file there and
# `make distclean` none in the build.
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
step "release tarball"
make -j"$jobs" dist-gzip
tarball=$PWD/$(ls -t mpizip-*.tar.gz | head -1)
if git -C .. rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  tar tzf "$tarball" | sed 's|^[^/]*/||' | sort > tarball.list
  # What the build and the tests read: sources, headers, build files and scripts anywhere, and
  # everything under tests/, python/, examples/, tools/, docs/ and .ci/.
  missing=$(git -C .. ls-files | grep -v '^osu-bench/results/' |
            grep -E '\.(c|cc|cpp|h|hpp|cu|cuh|F90|f90|inc|def|sh|mk|am|in|ac|m4)$|^(tests|python|examples|tools|docs|\.ci)/' |
            sort | comm -23 - tarball.list)
  [ -z "$missing" ] || { echo "check.sh: files of the tree missing from $tarball:"; echo "$missing"; exit 1; }
fi
cd ..
# The MPICH build is the release tarball's, as a user gets it: unpacked read-only, built outside
# it, its whole suite run, installed, uninstalled and cleaned (what `make distcheck` checks, on
# the build the MPICH tests need anyway).
step "MPICH build from the release tarball"
[ ! -d build-mpich ] || chmod -R u+w build-mpich
rm -rf build-mpich
mkdir -p build-mpich/src build-mpich/build
tar xzf "$tarball" -C build-mpich/src --strip-components=1
chmod -R a-w build-mpich/src
cd build-mpich/build
prefix="$(cd .. && pwd)/install"
../src/configure --with-mpi=mpich --without-cuda --without-gtest --prefix="$prefix"
make -j"$jobs"
step MPICH make check
make -j"$jobs" check || { cat test-suite.log; exit 1; }
step "make install into a scratch prefix"
# The log lives beside the build, not in it: distclean must leave the build empty.
log="$(cd .. && pwd)/install.log"
make install >"$log" 2>&1 || { cat "$log"; exit 1; }
MPIZIP_INSTALLED_PREFIX="$prefix" make check TESTS=tests/install.sh ||
  { cat tests/install.log; exit 1; }
make uninstall >>"$log" 2>&1 || { cat "$log"; exit 1; }
left=$(find "$prefix" -type f)
[ -z "$left" ] || { echo "check.sh: make uninstall left:"; echo "$left"; exit 1; }
make distclean >/dev/null
left=$(find . -type f)
[ -z "$left" ] || { echo "check.sh: make distclean left:"; echo "$left"; exit 1; }
cd ../..
step "all tests passed (Open MPI, then MPICH)"
