#!/bin/sh
# The Python package (python/mpizip) under mpi4py with NumPy host buffers on 2 ranks: without
# MPIZip (the fallback datatypes), and preloaded with host compression forced, where every message
# must be bit-exact and must have travelled compressed (tests/python/mpizip_test.py); then
# examples/weight_sync.py on 3 ranks. Skipped (77) where no python3 has mpi4py and NumPy.
. "$(dirname "$0")/../mpi/lib.sh"
: "${MPIZIP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
find_python
"$py" -c 'import mpi4py, numpy; print("python", mpi4py.__version__, numpy.__version__)'

pyenv="PYTHONPATH=$MPIZIP_SRCDIR/python PYTHONDONTWRITEBYTECODE=1"
test_py=$MPIZIP_SRCDIR/tests/python/mpizip_test.py
MPIZIP_TEST_ENV="$pyenv" run_mpi plain 2 "$py" "$test_py" plain || fail "plain run"
forced="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1"
out=$(MPIZIP_TEST_ENV="$pyenv $forced" run_mpi mpizip 2 "$py" "$test_py" mpizip 2>&1) ||
  fail "preloaded run: $out"
echo "$out"
echo "$out" | grep -q "mpizip_test mpizip: ok" || fail "preloaded run did not finish"
# MPIZIP_STATS=1 at MPI_Finalize: both messages of each type (Send, Isend) compressed on each side.
world="stats: comm 0 MPI_COMM_WORLD, 2 ranks: protocol:"
for t in bf16 fp16 fp8e4m3 fp8e5m2 fp32 fp64; do
  echo "$out" | grep "^\[mpizip 0\] $world" | grep -q "sent $t messages=2 compressed=2 " ||
    fail "rank 0 did not send two $t messages compressed"
  echo "$out" | grep "^\[mpizip 1\] $world" | grep -q "received $t messages=2 compressed=2 " ||
    fail "rank 1 did not receive two $t messages compressed"
done
echo "$out" | grep "^\[mpizip 0\] stats: comm [0-9]* dup of comm 0, 2 ranks, freed: protocol:" |
  grep -q "sent bf16 messages=2 compressed=2 " || fail "MPI_UINT16_T declared bf16 not compressed"

# The example: 3 tensors to 2 receivers, twice.
out=$(MPIZIP_TEST_ENV="$pyenv $forced" run_mpi mpizip 3 "$py" \
  "$MPIZIP_SRCDIR/examples/weight_sync.py" --mib 12 --tensors 3 --iters 2 2>&1) ||
  fail "weight_sync.py: $out"
echo "$out"
echo "$out" | grep -q "bit-exact on every receiver" || fail "weight_sync.py did not verify"
echo "$out" | grep "^\[mpizip 0\] $(echo "$world" | sed 's/2 ranks/3 ranks/')" |
  grep -q "sent bf16 messages=12 compressed=12 " || fail "weight_sync.py did not compress"
exit 0
