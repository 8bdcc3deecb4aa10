#!/bin/sh
# Which layer the MPI library's Fortran bindings call, and that libmpizip intercepts at that layer.
#
# 1. c_layer_probe, a C-level PMPI tool (as MPIZip's C entry points are), preloaded alone under a C
#    program (control: it sees its calls) and under fortran_calls built with mpif.h, use mpi and
#    use mpi_f08. Open MPI's Fortran bindings call its PMPI_ functions directly: the probe must see
#    none of the Fortran programs' calls, which is why libmpizip has Fortran entry points of its
#    own (src/interpose/fortran.h). Any other library (MPICH) must call the C MPI_ functions from
#    mpif.h and use mpi, where libmpizip's C entry points see them: the probe must count each of
#    the program's MPI_Init, MPI_Allreduce and MPI_Finalize calls. MPICH's use mpi_f08 calls them
#    for the procedures with a buffer (the probe must count the MPI_Allreduce calls), PMPI_ for
#    the others, whose counts are printed.
# 2. libmpizip's Fortran entry points. Open MPI: for each C entry point MPI_<Name>, mpi_<name>_,
#    mpi_<name>__, mpi_<name>, MPI_<NAME> and mpi_<name>_f08_ (fortran_gen.cc), but for the rows
#    of mpi_calls.def the generator names as having none (printed here). MPICH: mpi_<name>_f08_
#    of the calls without a buffer.
# tests/fortran/fortran.sh runs the programs under libmpizip and checks its statistics.
. "$(dirname "$0")/../mpi/lib.sh"
bin=$MPIZIP_BUILDDIR/tests/fortran
probe=$bin/.libs/libc_layer_probe.so
[ -x "$bin/fortran_calls_f08" ] || { echo "SKIP: no MPI Fortran compiler (configure's MPIFC)"; exit 77; }
[ -f "$probe" ] || fail "$probe not built"
openmpi=no
[ "$mpizip_mpi" = openmpi ] && openmpi=yes  # the library this build is configured for (launcher.sh)

out=$(run_mpi_preload "$probe" 2 "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "smoke under the probe: $out"
line=$(echo "$out" | grep "^c_layer_probe:" | head -n 1)
echo "C program: $line"
echo "$line" | grep -q "MPI_Send=[1-9]" || fail "the probe does not see a C program's MPI_Send"

for flavour in mpifh usempi f08; do
  if [ "$openmpi" = yes ] || [ "$flavour" != f08 ]; then
    out=$(run_mpi_preload "$probe" 2 "$bin/fortran_calls_$flavour" 2>&1) ||
      fail "fortran_calls_$flavour under the probe: $out"
    [ "$(echo "$out" | grep -c ": ok$")" = 2 ] || fail "fortran_calls_$flavour under the probe: $out"
  else
    # MPICH 4.0.2's own mpi_f08 MPI_Waitany fails the program's check (tests/fortran/fortran.sh).
    out=$(run_mpi_preload "$probe" 2 "$bin/fortran_calls_$flavour" no-bottom 2>&1)
  fi
  line=$(echo "$out" | grep "^c_layer_probe:" | head -n 1)
  [ -n "$line" ] || fail "no probe counts for $flavour: $out"
  echo "Fortran $flavour: $line"
  if [ "$openmpi" = yes ]; then
    if echo "$line" | grep -q "=[1-9]"; then
      fail "Open MPI's $flavour bindings reached the C MPI_ functions: revisit src/interpose/fortran.h"
    fi
  elif [ "$flavour" = f08 ]; then
    echo "$line" | grep -q "MPI_Allreduce=3 " ||
      fail "this library's mpi_f08 procedures with a buffer bypass the C MPI_ functions"
  else
    echo "$line" | grep "MPI_Init=1 " | grep "MPI_Allreduce=3 " | grep -q "MPI_Finalize=1" ||
      fail "this library's $flavour bindings bypass the C MPI_ functions, where libmpizip has no Fortran entry points"
  fi
done

if [ "$openmpi" = yes ]; then
  command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
  syms=$(nm -D --defined-only "$MPIZIP_LIB" | awk '{print $3}')
  c_entries=$(echo "$syms" | grep '^MPI_[A-Z][a-z0-9_]*$')
  [ "$(echo "$c_entries" | wc -l)" -gt 80 ] || fail "libmpizip exports too few C entry points"
  without=$(sed -n 's/^\/\/ .* have Fortran entry points; without: //p' \
    "$MPIZIP_BUILDDIR/src/interpose/fortran_entries.cc")
  [ -n "$without" ] || fail "src/interpose/fortran_entries.cc does not say which rows it covers"
  echo "rows without Fortran entry points: $without"
  for c in $c_entries; do
    case " $without " in *" $c "*) continue ;; esac
    lower=$(echo "$c" | tr 'A-Z' 'a-z')
    upper=$(echo "$c" | tr 'a-z' 'A-Z')
    for f in "${lower}_" "${lower}__" "$lower" "$upper" "${lower}_f08_"; do
      echo "$syms" | grep -qx "$f" || fail "libmpizip has $c but no Fortran entry point $f"
    done
  done
  echo "libmpizip: Fortran entry points for all $(echo "$c_entries" | wc -l) C entry points"
elif [ "$mpizip_mpi" = mpich ]; then
  command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
  syms=$(nm -D --defined-only "$MPIZIP_LIB" | awk '{print $3}')
  for f in init finalize wait waitall waitany test testall probe iprobe mprobe start startall \
           request_free comm_dup comm_split comm_free; do
    echo "$syms" | grep -qx "mpi_${f}_f08_" || fail "libmpizip has no mpi_${f}_f08_"
  done
  echo "$syms" | grep -qx "mpi_send_f08_" && fail "libmpizip defines mpi_send_f08_, a call with a buffer, which MPICH sends to the C MPI_Send"
  echo "libmpizip: MPICH's mpi_f08 entry points without a buffer"
fi
exit 0
