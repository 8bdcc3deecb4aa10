#!/bin/sh
# Bad input in the environment: an unknown value gives exactly one warning per rank naming the
# variable and the accepted values, then the default is used and the program runs correctly.
# MPIZIP_ENABLE=0 passes everything through (no statistics even when asked for).
. "$(dirname "$0")/lib.sh"
out=$(MPIZIP_TEST_ENV="MPIZIP_LOG=loud MPIZIP_STATS=maybe" run_mpi mpizip 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "run with bad settings failed: $out"
echo "$out"
n=$(echo "$out" | grep -c "warn: MPIZIP_LOG='loud' is not valid (accepted: error|warn|info|debug); using the default 'warn'")
[ "$n" = 2 ] || fail "expected one MPIZIP_LOG warning per rank, saw $n"
n=$(echo "$out" | grep -c "warn: MPIZIP_STATS='maybe' is not valid (accepted: 0|1|yes|no|true|false|on|off); using the default '0'")
[ "$n" = 2 ] || fail "expected one MPIZIP_STATS warning per rank, saw $n"
echo "$out" | grep -q "smoke: ok" || fail "program did not complete"

out=$(MPIZIP_TEST_ENV="MPIZIP_ENABLE=0 MPIZIP_STATS=1" run_mpi mpizip 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "run with MPIZIP_ENABLE=0 failed: $out"
if echo "$out" | grep -q "stats:"; then fail "MPIZIP_ENABLE=0 still collected statistics"; fi
exit 0
