#!/bin/sh
# mpizip-run launches a program with MPIZip preloaded in every rank, passing its arguments to
# mpirun: the smoke program runs and every rank prints MPIZip's statistics.
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2086
out=$(MPIZIP_STATS=1 "$MPIZIP_BUILDDIR/tools/mpizip-run" $launch_flags $(env_flag MPIZIP_STATS=1) -np 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "mpizip-run failed: $out"
echo "$out"
echo "$out" | grep -q "smoke: ok on 2 ranks" || fail "program output missing"
for r in 0 1; do
  echo "$out" | grep -q "^\[mpizip $r\] stats: comm 0 MPI_COMM_WORLD" || fail "rank $r did not load MPIZip"
done
