#!/bin/sh
# Fortran programs under libmpizip (tests/fortran/fortran_calls.F90, built with mpif.h, use mpi
# and use mpi_f08, 2 ranks): point-to-point in every completion form, probes and matched probes,
# persistent requests, MPI_BOTTOM, MPI_Allreduce (in place too), MPI_Gather with MPI_IN_PLACE,
# communicators made and freed. Each run checks every result bit for bit. Three runs per flavour:
# without MPIZip; preloaded with nothing for MPIZip to do, where a call reaching one of libmpizip's
# Fortran entry points goes to the MPI library's own (the debug log says so); preloaded with host
# compression forced and statistics on, which must count each Fortran call under its C name and
# show every REAL and DOUBLE PRECISION message compressed.
#
# With MPICH (4.0.2): its mpi_f08 MPI_Waitany returns an index counted from 0, so the mpi_f08
# program fails without MPIZip (and with MPIZip doing nothing, where MPICH's own procedure runs);
# those two runs are reported and skipped. Its MPI_Pack refuses MPI_BOTTOM (a null address), which
# MPIZip's packing of a derived datatype hands it, so the MPI_BOTTOM messages are left out there.
. "$(dirname "$0")/../mpi/lib.sh"
bin=$MPIZIP_BUILDDIR/tests/fortran
[ -x "$bin/fortran_calls_f08" ] || { echo "SKIP: no MPI Fortran compiler (configure's MPIFC)"; exit 77; }
if [ "$mpizip_mpi" = openmpi ]; then  # the library this build is configured for (launcher.sh)
  mpi=openmpi; arg=""; bottom=1
else
  mpi=other; arg="no-bottom"; bottom=0
fi

ok2() { [ "$(echo "$1" | grep -c ": ok$")" = 2 ]; }
# has OUTPUT RANK PREFIX TEXT: a stats line of RANK starting with PREFIX contains TEXT.
has() {
  echo "$1" | grep "^\[mpizip $2\] stats: $3" | grep -q -- "$4" || fail "$flavour rank $2 '$3': no '$4'"
}

for flavour in mpifh usempi f08; do
  prog=$bin/fortran_calls_$flavour
  if [ "$mpi" = other ] && [ "$flavour" = f08 ]; then
    echo "SKIP: $flavour without MPIZip and with MPIZip doing nothing (the library's MPI_Waitany)"
  else
    out=$(run_mpi plain 2 "$prog" $arg 2>&1) || fail "$flavour without MPIZip: $out"
    ok2 "$out" || fail "$flavour without MPIZip: $out"
    out=$(MPIZIP_TEST_ENV="MPIZIP_LOG=debug" run_mpi mpizip 2 "$prog" $arg 2>&1) ||
      fail "$flavour preloaded: $out"
    ok2 "$out" || fail "$flavour preloaded: $out"
    if [ "$mpi" = openmpi ]; then
      echo "$out" | grep -q "Fortran MPI_SEND: nothing for MPIZip to do, the MPI library's own pmpi_send" ||
        fail "$flavour preloaded, nothing to do: MPI_SEND did not go to the library's own entry point"
    fi
  fi

  forced="MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0 MPIZIP_STATS=1"
  out=$(MPIZIP_TEST_ENV="$forced" run_mpi mpizip 2 "$prog" $arg 2>&1) || fail "$flavour forced: $out"
  echo "$out" | grep -v "MPI_Testall\|MPI_Iprobe"
  ok2 "$out" || fail "$flavour with compression forced: $out"
  world="comm 0 MPI_COMM_WORLD, 2 ranks: MPI_"
  has "$out" 0 "$world" "MPI_Send calls=$((4 + bottom)) bytes=$((6000000 + bottom * 1200000));"
  has "$out" 0 "$world" "MPI_Isend calls=3 bytes=4800000;"
  has "$out" 0 "$world" "MPI_Send_init calls=1 "
  has "$out" 1 "$world" "MPI_Recv calls=$((3 + bottom)) bytes=$((4800000 + bottom * 1200000));"
  has "$out" 1 "$world" "MPI_Probe calls=1 "
  has "$out" 1 "$world" "MPI_Mprobe calls=1 "
  has "$out" 1 "$world" "MPI_Recv_init calls=1 "
  for r in 0 1; do
    has "$out" $r "$world" "MPI_Allreduce calls=3 bytes=6000000;"
    has "$out" $r "$world" "MPI_Sendrecv calls=1 bytes=2400000;"
    has "$out" $r "$world" "MPI_Comm_split calls=1 "
    has "$out" $r "no communicator: " "MPI_Start calls=2 "
    has "$out" $r "no communicator: " "MPI_Comm_free calls=2 "
    has "$out" $r "no communicator: " "MPI_Finalize calls=1 "
  done
  # MPI_IN_PLACE seen as such: rank 0's MPI_Gather counts no send bytes, rank 1's its 1000.
  has "$out" 0 "$world" "MPI_Gather calls=1 bytes=0;"
  has "$out" 1 "$world" "MPI_Gather calls=1 bytes=4000;"
  has "$out" 1 "no communicator: " "MPI_Mrecv calls=1 bytes=1200000;"
  has "$out" 1 "no communicator: " "MPI_Imrecv calls=1 bytes=1200000;"
  has "$out" 1 "no communicator: " "MPI_Waitany calls=1 "
  # Every REAL and DOUBLE PRECISION message took the protocol, compressed.
  proto="comm 0 MPI_COMM_WORLD, 2 ranks: protocol:"
  has "$out" 1 "$proto" "received fp32 messages=$((7 + bottom)) compressed=$((7 + bottom)) "
  has "$out" 1 "$proto" "received fp64 messages=3 compressed=3 "
  has "$out" 1 "comm [0-9]* dup of comm 0, 2 ranks, freed: protocol:" \
    "received fp32 messages=1 compressed=1 "
  echo "$flavour: bit-exact, every call counted, every message compressed"
done
exit 0
