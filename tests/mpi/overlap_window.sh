#!/bin/sh
# Non-blocking receives into one buffer (tests/mpi/overlap_window.c, OSU's osu_bw window): plain,
# at MPIZip's defaults, and with the protocol and compression forced, where every one of the 36
# messages must be received through the protocol (statistics) and no send abandoned.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/overlap_window"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_mpi plain 2 "$prog" || fail "plain"
run_mpi mpizip 2 "$prog" || fail "MPIZip defaults"
MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1" \
  run_mpi mpizip 2 "$prog" >"$out" 2>&1 || { cat "$out"; fail "protocol forced"; }
grep -q 'received fp32 messages=36 ' "$out" || { cat "$out"; fail "not every message took the protocol"; }
! grep -q 'abandoned\|overlapping buffers' "$out" || { cat "$out"; fail "a payload was not taken"; }
echo "overlap_window: every message of a window received into one buffer"
