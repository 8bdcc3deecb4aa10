#!/bin/sh
# Erroneous arguments and datatype pairings on messages the protocol takes (tests/mpi/arg_errors.c;
# issue 32, parts 3(b)-(e)), on 2 ranks: without MPIZip, with it, with the protocol on alone, with
# it forced (compression of every message, the two-shot allreduce), and forced with the progress
# thread. The error class of every call must be the plain run's (the program prints them), the data and
# counts right (the program checks them); and after a handled truncation the job must end with
# status 0 within $limit seconds (an abandoned send once kept MPI_Finalize waiting, then failed).
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
prog="$MPIZIP_BUILDDIR/tests/mpi/arg_errors"
limit=8
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
forced="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE=twoshot MPIZIP_FORCE_INTERNODE=1"

run_mpi plain 2 "$prog" > "$out/plain" || { cat "$out/plain"; fail "plain"; }
grep -v '^\[mpizip' "$out/plain" > "$out/plain.s"
[ "$(grep -c ': class ' "$out/plain.s")" -ge 11 ] || fail "plain run printed too little"
n=0
for mode in "" "MPIZIP_PROTOCOL=on" "$forced" "$forced MPIZIP_PROGRESS_THREAD=on"; do
  n=$((n + 1))
  MPIZIP_TEST_ENV="$mode" run_mpi mpizip 2 "$prog" > "$out/mpizip$n"
  rc=$?
  grep -v '^\[mpizip' "$out/mpizip$n" | diff "$out/plain.s" - ||
    fail "MPIZip ${mode:-at its defaults}: error classes differ from the plain run's"
  [ $rc -eq 0 ] || fail "MPIZip ${mode:-at its defaults}: exit status $rc"
done

# (b) The truncation, then MPI_Finalize: status 0, at once (bounded at 60 s).
for mode in plain "MPIZIP_PROTOCOL=on" "$forced" "$forced MPIZIP_PROGRESS_THREAD=on"; do
  start=$(date +%s)
  if [ "$mode" = plain ]; then
    timeout -k 10 60 sh -c ". '$here/lib.sh'; run_mpi plain 2 '$prog' truncate"
  else
    MPIZIP_TEST_ENV="$mode" timeout -k 10 60 sh -c ". '$here/lib.sh'; run_mpi mpizip 2 '$prog' truncate"
  fi
  rc=$?
  took=$(( $(date +%s) - start ))
  echo "truncation then MPI_Finalize ($mode): status $rc after $took s"
  [ $rc -eq 0 ] || fail "truncation then MPI_Finalize ($mode): exit status $rc"
  [ $took -lt $limit ] || fail "truncation then MPI_Finalize ($mode): $took s, not under $limit s"
done
echo "arg_errors: ok"
