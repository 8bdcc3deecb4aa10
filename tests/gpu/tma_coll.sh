#!/bin/sh
# The TMA intra-node collectives on 2, 3 and 4 ranks sharing the GPU (tests/gpu/tma_coll.cc), with
# the end barrier in GPU memory and on the host, and on the SM load/store path; the log must show
# that the path was taken. Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/tma_coll"
"$prog" >/dev/null 2>&1; [ $? = 77 ] && exit 77
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for np in 2 3 4; do
  for cfg in "MPIZIP_TMA=auto" "MPIZIP_TMA_SYNC=host" "MPIZIP_TMA=sm MPIZIP_TMA_CTAS=3"; do
    MPIZIP_TEST_ENV="MPIZIP_LOG=info $cfg" run_mpi mpizip "$np" "$prog" ${TMA_TEST_ARGS:-} >"$log" 2>&1 ||
      { cat "$log"; fail "$np ranks, $cfg"; }
    grep -q "TMA collectives on for $np ranks" "$log" || { cat "$log"; fail "$np ranks, $cfg: path not taken"; }
    grep "tma_coll:" "$log"
  done
done
