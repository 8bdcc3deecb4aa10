#!/bin/sh
# A process that never calls MPI_Init is unaffected by the preload: same output, nothing on stderr,
# same exit status; mpizip-info runs without MPI too.
. "$(dirname "$0")/lib.sh"
err=$(mktemp)
out=$(LD_PRELOAD="$MPIZIP_LIB" MPIZIP_LOG=debug MPIZIP_STATS=1 sh -c 'echo hello; exit 3' 2>"$err")
rc=$?
[ "$out" = hello ] || fail "stdout changed: '$out'"
[ $rc = 3 ] || fail "exit status changed: $rc"
[ ! -s "$err" ] || fail "stderr not empty: $(cat "$err")"
rm -f "$err"
"$MPIZIP_BUILDDIR/tools/mpizip-info" | grep -q "^MPIZip " || fail "mpizip-info"
exit 0
