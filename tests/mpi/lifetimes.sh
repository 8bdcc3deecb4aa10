#!/bin/sh
# Operations that complete after MPI_Comm_free (tests/mpi/lifetimes.c; issue 32, part 3(a)), on 2
# ranks: without MPIZip, with it, with the protocol and the two-shot allreduce forced (and
# MPIZIP_STATS=1, whose counters of a freed communicator were written after it was gone), and,
# where valgrind is installed (under Open MPI), under valgrind: an invalid read or write fails.
# Open MPI 4.1's own MPI_Iallreduce (libnbc) crashes on a freed communicator: the runs that leave
# it to the MPI library (plain, MPIZip's defaults) take the point-to-point case only there.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/lifetimes"
forced="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE=twoshot MPIZIP_FORCE_INTERNODE=1"
cases=""
[ "$mpizip_mpi" = openmpi ] && cases=p2p
# shellcheck disable=SC2086
run_mpi plain 2 "$prog" $cases || fail "plain"
# shellcheck disable=SC2086
run_mpi mpizip 2 "$prog" $cases || fail "MPIZip"
MPIZIP_TEST_ENV="$forced MPIZIP_STATS=1" run_mpi mpizip 2 "$prog" > /dev/null || fail "forced, MPIZIP_STATS=1"
if [ "$mpizip_mpi" != openmpi ] || ! command -v valgrind > /dev/null 2>&1; then
  echo "lifetimes: valgrind runs skipped (valgrind missing or not Open MPI)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Open MPI's own noise: its suppressions, and PMIx writing partly set buffers to its server.
cat > "$tmp/pmix.supp" <<'SUPP'
{
   pmix_send_handler_writev
   Memcheck:Param
   writev(vector[...])
   ...
   fun:pmix_ptl_base_send_handler
}
SUPP
supp="--suppressions=$tmp/pmix.supp"
for f in /usr/share/openmpi/openmpi-valgrind.supp; do [ -f "$f" ] && supp="$supp --suppressions=$f"; done
vg="valgrind -q --error-exitcode=1 $supp"
# The two-shot's completion after the free (6 rounds: valgrind is slow); then the point-to-point
# counters (MPIZIP_STATS=1), 40 messages (fewer do not always reach the freed state in time).
# shellcheck disable=SC2086
MPIZIP_TEST_ENV="$forced" run_mpi mpizip 2 $vg "$prog" iallreduce 6 > "$tmp/iallreduce" 2>&1 ||
  { grep -A12 "Invalid\|uninitialised" "$tmp/iallreduce" | head -40; fail "valgrind, forced: iallreduce"; }
# shellcheck disable=SC2086
MPIZIP_TEST_ENV="$forced MPIZIP_STATS=1" run_mpi mpizip 2 $vg "$prog" p2p > "$tmp/p2p" 2>&1 ||
  { grep -A12 "Invalid\|uninitialised" "$tmp/p2p" | head -40; fail "valgrind, forced, MPIZIP_STATS=1: p2p"; }
echo "lifetimes: ok (valgrind clean)"
