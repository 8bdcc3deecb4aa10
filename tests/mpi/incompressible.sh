#!/bin/sh
# Incompressible streams travel raw (tests/mpi/incompressible.c, p2p/stream_ratios.h): 40 messages
# of random float bits and 40 of smooth floats, host compression on. From the sender's statistics:
# at the default, 3 of the random stream's messages (its probe) are compressed and none of the rest
# (its first retry would be the 64th), every smooth one is, and the stream is counted
# incompressible; MPIZIP_COMPRESS=always compresses all 80, never none. Every message arrives exact.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/incompressible"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
base="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1"
check() {  # check SETTING COMPRESSED-MESSAGES [MORE-GREP]
  MPIZIP_TEST_ENV="$base $1" run_mpi mpizip 2 "$prog" >"$out" 2>&1 || { cat "$out"; fail "$1: exit"; }
  grep -q "incompressible: 40 messages each way exact" "$out" || { cat "$out"; fail "$1: data"; }
  grep -q "\[mpizip 0\] stats: .*sent fp32 messages=80 compressed=$2 " "$out" ||
    { grep 'mpizip 0' "$out"; fail "$1: expected $2 of 80 messages compressed"; }
  [ -z "${3:-}" ] || grep -q "\[mpizip 0\] stats: .*$3" "$out" || { grep 'mpizip 0' "$out"; fail "$1: no '$3'"; }
}
check "" 40 "incompressible streams=1 sent raw=37;"
check "MPIZIP_COMPRESS=always" 40 "incompressible streams=1 sent raw=0;"
check "MPIZIP_COMPRESS=never" 0
echo "incompressible: random streams travel raw after their probe; always and never obeyed"
