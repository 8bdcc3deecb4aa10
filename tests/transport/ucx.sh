#!/bin/sh
# The UCX transport on 2 and 3 ranks with UCX_TLS=tcp,self,sm, on 2 ranks with tcp,self alone, and
# its staging of device buffers with a stand-in GPU runtime (tests/transport/ucx_test.cc says what
# each run checks; its last case, a failed peer, makes the other ranks log "connection to a peer
# lost"). Skipped (77) in builds without UCX. Under MPICH (ch4:ucx, whose own UCX shares the
# process), the TCP-only run leaves out the failed peer: after it, MPICH's own MPI_Finalize over TCP
# alone waits forever in about one run in six; the failure is still tested there over TCP and
# shared memory.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/transport/ucx_test"
staged="$MPIZIP_BUILDDIR/tests/transport/ucx_staged_test"
[ -x "$prog" ] || { echo "SKIP: built without UCX"; exit 77; }

for np in 2 3; do
  MPIZIP_TEST_ENV="UCX_TLS=tcp,self,sm" run_mpi plain "$np" "$prog" || fail "$np ranks, tcp+sm"
done
tcp_only=""
[ "$mpizip_mpi" = mpich ] && tcp_only=--no-peer-failure
# shellcheck disable=SC2086
MPIZIP_TEST_ENV="UCX_TLS=tcp,self" run_mpi plain 2 "$prog" $tcp_only || fail "2 ranks, tcp only"
MPIZIP_TEST_ENV="UCX_TLS=tcp,self,sm" run_mpi plain 2 "$staged" || fail "2 ranks, staged"
