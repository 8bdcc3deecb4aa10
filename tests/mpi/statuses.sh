#!/bin/sh
# Statuses exactly as without MPIZip (tests/mpi/statuses.c): the same output plain, with MPIZip,
# and with the protocol forced on with compression of every message (also through the progress
# thread). The differences allowed: a cancelled receive's source, tag and count, which MPI leaves
# unspecified; and under MPICH the count of a truncated receive, which MPICH itself reports as the
# whole message, none or the part delivered depending on its path (MPIZip reports the part
# delivered, as MPICH does between a rank and itself); Open MPI always counts the whole message,
# and MPIZip does too there.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/statuses"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
truncated='s/^\(.*\): class 14 \(source [-0-9]* tag [-0-9]* error [-0-9]*\) count [-0-9]* elements [-0-9]*/\1: class 14 \2/'
[ "$mpizip_mpi" = mpich ] || truncated=''
strip() {
  grep -v '^\[mpizip' "$1" |
    sed -e 's/^\(cancelled irecv[^:]*\): class \([0-9]*\) source [-0-9]* tag [-0-9]* \(error [-0-9]*\) count [-0-9]* elements [-0-9]*/\1: class \2 \3/' \
        -e "$truncated"
}
run_mpi plain 2 "$prog" > "$out/plain" || fail "plain"
strip "$out/plain" > "$out/plain.s"
[ "$(grep -c . "$out/plain.s")" -ge 60 ] || fail "plain run printed too little"
run_mpi mpizip 2 "$prog" > "$out/mpizip" || fail "MPIZip"
strip "$out/mpizip" | diff "$out/plain.s" - || fail "MPIZip's statuses differ"
for mode in "" "MPIZIP_PROGRESS_THREAD=on" "MPIZIP_PROTOCOL_TYPES=all"; do
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 $mode" \
    run_mpi mpizip 2 "$prog" > "$out/forced" || fail "forced $mode"
  strip "$out/forced" | diff "$out/plain.s" - || fail "statuses differ with the protocol forced $mode"
done
