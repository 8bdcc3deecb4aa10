#!/bin/sh
# Bad input in the environment: an unknown value gives exactly one warning per rank naming the
# variable and the accepted values, then the default is used and the program runs correctly.
# A value outside a setting's range (settings.def) gives exactly one warning per rank naming the
# variable, the value and the value used, which is the nearest one in range (mpizip-info shows it).
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

out=$(MPIZIP_TEST_ENV="MPIZIP_TMA_CHUNK_BYTES=1000" run_mpi mpizip 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "run with an out-of-range value failed: $out"
echo "$out"
n=$(echo "$out" | grep -c "warn: MPIZIP_TMA_CHUNK_BYTES=1000 is out of range (1K..64K, a multiple of 16); using 1024$")
[ "$n" = 2 ] || fail "expected one MPIZIP_TMA_CHUNK_BYTES warning per rank, saw $n"
echo "$out" | grep -q "smoke: ok" || fail "program did not complete"
# mpizip-info shows where the cost model compresses before it has measured anything: bf16 at its
# typical ratio from 16 MiB at 47 GB/s, never at 400 (docs/DESIGN.md), and the setting that forces it.
info=$(MPIZIP_COMPRESS=never "$MPIZIP_BUILDDIR/tools/mpizip-info" 2>&1)
echo "$info" | grep "device bf16" | grep -q "from 16384 KiB at 47, .*never at 400 GB/s (MPIZIP_COMPRESS=never" ||
  fail "mpizip-info's cost model line: $(echo "$info" | grep 'device bf16')"
info=$(MPIZIP_TMA_CHUNK_BYTES=1000 "$MPIZIP_BUILDDIR/tools/mpizip-info" 2>&1)
echo "$info" | grep -Eq "MPIZIP_TMA_CHUNK_BYTES += 1024 " ||
  fail "MPIZIP_TMA_CHUNK_BYTES=1000 should be used as 1024: $(echo "$info" | grep TMA_CHUNK)"

out=$(MPIZIP_TEST_ENV="MPIZIP_ENABLE=0 MPIZIP_STATS=1" run_mpi mpizip 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "run with MPIZIP_ENABLE=0 failed: $out"
if echo "$out" | grep -q "stats:"; then fail "MPIZIP_ENABLE=0 still collected statistics"; fi
exit 0
