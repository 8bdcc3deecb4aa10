#!/bin/sh
# The UCX transport on 2 and 3 ranks with UCX_TLS=tcp,self,sm, on 2 ranks with tcp,self alone, and
# its staging of device buffers with a stand-in GPU runtime (tests/transport/ucx_test.cc says what
# each run checks; its last case, a failed peer, makes the other ranks log "connection to a peer
# lost"). Skipped (77) in builds without UCX.
. "$(dirname "$0")/../mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/transport/ucx_test"
staged="$MPIZIP_BUILDDIR/tests/transport/ucx_staged_test"
[ -x "$prog" ] || { echo "SKIP: built without UCX"; exit 77; }

for np in 2 3; do
  MPIZIP_TEST_ENV="UCX_TLS=tcp,self,sm" run_mpi plain "$np" "$prog" || fail "$np ranks, tcp+sm"
done
MPIZIP_TEST_ENV="UCX_TLS=tcp,self" run_mpi plain 2 "$prog" || fail "2 ranks, tcp only"
MPIZIP_TEST_ENV="UCX_TLS=tcp,self,sm" run_mpi plain 2 "$staged" || fail "2 ranks, staged"
