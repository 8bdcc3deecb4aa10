#!/bin/sh
# The tests' launcher under MPICH (set up by tests/mpi/launcher.sh): runs MPIZIP_YIELD_LAUNCHER (the
# configured mpiexec) with the same arguments, adding MPIZIP_YIELD_SHIM (tests/mpi/idle_yield.c:
# ranks that wait yield the core instead of spinning through their time slice) to every rank's
# LD_PRELOAD, after whatever the test preloads (libmpizip first, as before).
set -u
launcher=${MPIZIP_YIELD_LAUNCHER:?}
shim=${MPIZIP_YIELD_SHIM:?}
n=$#
found=0
prev=""
while [ "$n" -gt 0 ]; do
  a=$1
  shift
  n=$((n - 1))
  case $prev:$a in
    -genv:LD_PRELOAD=* | -env:LD_PRELOAD=*)
      a="$a:$shim"
      found=1 ;;
  esac
  set -- "$@" "$a"
  prev=$a
done
[ "$found" = 1 ] || set -- -genv "LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$shim" "$@"
exec "$launcher" "$@"
