#!/bin/sh
# The MPI library beneath runs at the thread level the application asked for, with MPIZip too
# (tests/mpi/thread_level.c; issue 32, part 1): for each level, on 2 ranks, the plain run tells
# what the MPI library grants; then with MPIZip at its defaults and with the protocol forced, the
# application must be granted the same level and PMPI_Query_thread must answer it (Open MPI 4.1
# drops to MPI_THREAD_SINGLE, and stops locking, when MPI_T_init_thread asks for less after
# MPI_Init). With the progress thread on, the library may run above the level granted. At
# MPI_THREAD_MULTIPLE 4 threads per rank exchange messages. Each run is bounded (a library that
# stopped locking may hang).
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
prog="$MPIZIP_BUILDDIR/tests/mpi/thread_level"
limit=${THREAD_LEVEL_TIMEOUT:-60}
forced="MPIZIP_PROTOCOL=on MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_ALLREDUCE=twoshot MPIZIP_FORCE_INTERNODE=1"

# run MODE SETTINGS ARGS...: thread_level on 2 ranks within $limit seconds; its output in $out.
run() {
  r_mode=$1 r_env=$2
  shift 2
  out=$(MPIZIP_TEST_ENV="$r_env" timeout -k 10 "$limit" sh -c \
        ". '$here/lib.sh'; run_mpi $r_mode 2 '$prog' $*" 2>&1)
  r_rc=$?
  echo "$out" | grep -v '^\[mpizip'
  [ $r_rc -eq 124 ] && fail "$r_mode ${r_env:-defaults} $*: hung (no end within $limit s)"
  [ $r_rc -eq 0 ] || fail "$r_mode ${r_env:-defaults} $*: exit $r_rc"
}

for level in single funneled serialized multiple; do
  run plain "" "$level"
  granted=$(echo "$out" | sed -n "s/^thread_level: $level provided \([a-z]*\)$/\1/p")
  [ -n "$granted" ] || fail "plain $level: no level granted"
  run mpizip "" "$level" "$granted"
  run mpizip "$forced" "$level" "$granted"
done
# The progress thread asks the library for MPI_THREAD_MULTIPLE: the application still gets its own.
for level in single multiple; do
  run mpizip "$forced MPIZIP_PROGRESS_THREAD=on" "$level" "$level" progress
done
echo "thread_level: ok"
