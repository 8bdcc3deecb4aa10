#!/bin/sh
# Settings that must be the same on every rank (MPIZIP_AGREED in src/core/settings.def), set
# differently on one rank (tests/mpi/rank_env.sh): the run completes with bit-exact results
# (tests/mpi/agreement.c), exactly one warning names the setting and both values, and MPIZip is off
# for the communicators (MPIZip_Comm_protocol 0). With the same values everywhere, MPIZip stays on
# and says nothing. Each run is bounded: a hang fails.
. "$(dirname "$0")/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/mpi/agreement"
wrap="$MPIZIP_SRCDIR/tests/mpi/rank_env.sh"
limit=${AGREEMENT_TIMEOUT:-120}

# The same settings everywhere: on, no word.
out=$(MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1" timeout "$limit" sh -c \
      ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 2 '$prog'" 2>&1) ||
  fail "run with agreeing settings failed: $out"
echo "$out"
echo "$out" | grep -q "agreement: ok" || fail "agreeing run: results wrong"
echo "$out" | grep -q "protocol on MPI_COMM_WORLD 1, on its duplicate 1" ||
  fail "agreeing run: MPIZip should be on for both communicators"
if echo "$out" | grep -q "differ"; then fail "agreeing run: a disagreement was reported"; fi

# One setting differs on rank 1: the two-shot's piece size, then its algorithm.
for case in "MPIZIP_ALLREDUCE_PIECE_BYTES 64K 128K 65536 131072" "MPIZIP_ALLREDUCE twoshot off twoshot off" \
            "MPIZIP_TMA_MAX_CTAS 8 4 8 4"; do
  set -- $case
  var=$1; v0=$2; v1=$3; t0=$4; t1=$5
  out=$(MPIZIP_TEST_ENV="MPIZIP_HOST_COMPRESS=1 $var=$v0" timeout "$limit" sh -c \
        ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip 2 '$wrap' 1 '$var=$v1' -- '$prog'" 2>&1) ||
    fail "$var $v0 / $v1: the run failed or hung: $out"
  echo "$out"
  echo "$out" | grep -q "agreement: ok" || fail "$var $v0 / $v1: results wrong"
  echo "$out" | grep -q "protocol on MPI_COMM_WORLD 0, on its duplicate 0" ||
    fail "$var $v0 / $v1: MPIZip should be off for both communicators"
  want="warn: $var differs across the ranks of MPI_COMM_WORLD ($var $t0 on rank 0, $t1 on rank 1); MPIZip is off for that communicator: its calls go to the MPI library"
  n=$(echo "$out" | grep -c "differ")
  [ "$n" = 1 ] || fail "$var $v0 / $v1: expected exactly one line naming the setting, saw $n"
  echo "$out" | grep -qF "$want" || fail "$var $v0 / $v1: expected the line '$want'"
done
exit 0
