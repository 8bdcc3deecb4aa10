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
# A null request's status is MPI's empty status, MPI_ERROR included, with MPIZip: Open MPI and MPICH leave
# that field as it was (the program pre-fills it with 4242), so the error of those lines is compared
# apart, below.
strip() {
  grep -v '^\[mpizip' "$1" |
    sed -e 's/^\(cancelled irecv[^:]*\): class \([0-9]*\) source [-0-9]* tag [-0-9]* \(error [-0-9]*\) count [-0-9]* elements [-0-9]*/\1: class \2 \3/' \
        -e 's/^\([a-z_]* null[] [0-9]*: .*\) error [-0-9]* /\1 error E /' \
        -e "$truncated"
}
# Every null-request line of a run with MPIZip reports MPI_ERROR = MPI_SUCCESS.
empty_error() {
  [ "$(grep -c '^[a-z_]* null[] [0-9]*: ' "$1")" -ge 4 ] || fail "$2: too few null-request lines"
  ! grep '^[a-z_]* null[] [0-9]*: ' "$1" | grep -v ' error 0 ' || fail "$2: a null request's MPI_ERROR is not MPI_SUCCESS"
}
run_mpi plain 2 "$prog" > "$out/plain" || fail "plain"
strip "$out/plain" > "$out/plain.s"
[ "$(grep -c . "$out/plain.s")" -ge 60 ] || fail "plain run printed too little"
run_mpi mpizip 2 "$prog" > "$out/mpizip" || fail "MPIZip"
strip "$out/mpizip" | diff "$out/plain.s" - || fail "MPIZip's statuses differ"
empty_error "$out/mpizip" "MPIZip"
for mode in "" "MPIZIP_PROGRESS_THREAD=on" "MPIZIP_PROGRESS_THREAD=off"; do
  MPIZIP_TEST_ENV="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 $mode" \
    run_mpi mpizip 2 "$prog" > "$out/forced" || fail "forced $mode"
  strip "$out/forced" | diff "$out/plain.s" - || fail "statuses differ with the protocol forced $mode"
  empty_error "$out/forced" "forced $mode"
done
