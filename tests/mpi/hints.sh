#!/bin/sh
# Per-communicator hints (src/core/comm_hints.h, tests/mpi/hints.c) on 2, 3 and 4 ranks: without
# MPIZip the program's data is bit-exact; with MPIZip, the protocol forced on host buffers
# (MPIZIP_PROTOCOL=on, statistics on), and the environment asking for no host compression and no
# two-shot allreduce, every hint changes the path taken on its communicator only, as the program
# checks. Here: the warnings. Invalid values warn once per rank and keep the values in force; the
# must-agree hints that differ across the ranks give exactly one line (rank 0), naming both, and
# nothing else warns. Each run is bounded: a hang fails.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/hints"
limit=${HINTS_TIMEOUT:-180}

for np in 2 3 4; do
  out=$(timeout "$limit" sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi plain $np '$prog'" 2>&1) ||
    fail "plain run on $np ranks failed: $out"
  echo "$out" | grep -q "^hints: ok" || fail "plain run on $np ranks: $out"

  out=$(MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_STATS=1 MPIZIP_HOST_COMPRESS=0 MPIZIP_ALLREDUCE=off" \
        timeout "$limit" sh -c ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog'" 2>&1) ||
    fail "MPIZip run on $np ranks failed or hung: $out"
  echo "$out" | grep -v "stats:"
  for case in siblings dup min_bytes allreduce pending mixed; do
    echo "$out" | grep -q "^hints: $case ok" || fail "$np ranks: case $case did not finish"
  done
  echo "$out" | grep -q "^hints: ok" || fail "$np ranks: checks failed"

  warns=$(echo "$out" | grep "warn:")
  n=$(echo "$warns" | grep -c "mpizip_min_bytes='abc' is not valid (accepted: a byte count with optional K, M or G suffix); keeping mpizip_min_bytes=65536")
  [ "$n" = "$np" ] || fail "$np ranks: $n warnings for mpizip_min_bytes=abc, want one per rank"
  n=$(echo "$warns" | grep -c "mpizip_tma='maybe' is not valid (accepted: auto|sm|off); keeping mpizip_tma=auto")
  [ "$n" = "$np" ] || fail "$np ranks: $n warnings for mpizip_tma=maybe, want one per rank"
  want="warn: mpizip_allreduce, mpizip_tma differ across the ranks of mixed (mpizip_allreduce twoshot on rank 0, auto on rank 1; mpizip_tma sm on rank 0, off on rank 1); the communicator keeps MPIZip's default instead (the environment's value)"
  n=$(echo "$warns" | grep -c "differ")
  [ "$n" = 1 ] || fail "$np ranks: $n lines about differing hints, want 1"
  echo "$warns" | grep -qF "[mpizip 0] $want" || fail "$np ranks: expected the line '$want'"
  n=$(echo "$warns" | wc -l)
  [ "$n" = $((2 * np + 1)) ] || fail "$np ranks: $n warnings, want $((2 * np + 1))"
done
exit 0
