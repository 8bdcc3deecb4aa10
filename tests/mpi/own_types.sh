#!/bin/sh
# Reductions of MPIZip's own float types (bf16, fp16, fp8) through every reducing call on host
# buffers (tests/mpi/own_types.cc), exact: at the defaults on 2 and 4 ranks (the MPI library folds
# them with MPIZip's operation, library_op), with the protocol and host compression on (3 ranks),
# and with every rank its own node, where MPIZip's two-shot takes the allreduces and
# reduce-scatters (3 ranks; its fp8 messages counted in the statistics show that it did).
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/own_types"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 4; do
  run_mpi mpizip "$np" "$prog" || fail "$np ranks, defaults"
done
MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0" \
  run_mpi mpizip 3 "$prog" || fail "3 ranks, protocol and host compression on"
MPIZIP_TEST_ENV="MPIZIP_FORCE_INTERNODE=1 MPIZIP_HOST_COMPRESS=1 MPIZIP_STATS=1" run_mpi mpizip 3 "$prog" \
  >"$out" 2>&1 || { cat "$out"; fail "3 ranks, every rank its own node"; }
grep -q 'sent fp8e4m3 messages=[1-9]' "$out" && grep -q 'sent fp8e5m2 messages=[1-9]' "$out" ||
  { cat "$out"; fail "3 ranks, every rank its own node: the two-shot did not carry fp8"; }
echo "own_types: every reduction of MPIZip's float types exact"
