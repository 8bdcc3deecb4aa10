#!/bin/sh
# An unmodified C program using every intercepted entry point passes with and without MPIZip,
# on 2, 3 and 4 ranks.
. "$(dirname "$0")/lib.sh"
for np in 2 3 4; do both "$np" "$MPIZIP_BUILDDIR/tests/mpi/smoke"; done
