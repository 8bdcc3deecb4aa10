#!/bin/sh
# The PMPI transport and the emulated link with host buffers (tests/transport/transport_test.cc) on
# 2 and 3 ranks, with every rank on this node and with every rank a node of its own.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/transport/transport_test"
for np in 2 3; do
  for kind in pmpi emulated; do
    for force in 0 1; do
      run_mpi plain "$np" "$prog" "$kind" "$force" ||
        fail "$np ranks, $kind, force_internode=$force"
    done
  done
done
