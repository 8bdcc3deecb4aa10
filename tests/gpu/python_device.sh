#!/bin/sh
# The Python package (python/mpizip) with CuPy and PyTorch device arrays on 2 ranks sharing the GPU,
# MPIZip preloaded: bit-exact and compressed (tests/gpu/python_device.py), then
# examples/weight_sync.py with each. A library that is missing is skipped; 77 when both are, or
# when no python3 has mpi4py.
. "$(dirname "$0")/../mpi/lib.sh"
: "${MPIZIP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
find_python
# Every rank its own node: device buffers are compressed on the GPU (on one node they move raw).
env="PYTHONPATH=$MPIZIP_SRCDIR/python PYTHONDONTWRITEBYTECODE=1 MPIZIP_STATS=1 MPIZIP_FORCE_INTERNODE=1"
ran=0
for lib in cupy torch; do
  if ! "$py" -c "import $lib" 2>/dev/null; then echo "SKIP: $lib is not installed"; continue; fi
  rc=0
  MPIZIP_TEST_ENV="$env" run_mpi mpizip 2 "$py" "$MPIZIP_SRCDIR/tests/gpu/python_device.py" "$lib" ||
    rc=$?
  [ "$rc" -eq 77 ] && continue
  [ "$rc" -eq 0 ] || fail "python_device.py $lib"
  out=$(MPIZIP_TEST_ENV="$env" run_mpi mpizip 2 "$py" "$MPIZIP_SRCDIR/examples/weight_sync.py" \
    --backend "$lib" --mib 256 --tensors 8 2>&1) || fail "weight_sync.py --backend $lib: $out"
  echo "$out"
  echo "$out" | grep -q "bit-exact" || fail "weight_sync.py --backend $lib did not verify"
  ran=1
done
[ "$ran" = 1 ] || exit 77
exit 0
