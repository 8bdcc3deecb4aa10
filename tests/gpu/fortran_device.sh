#!/bin/sh
# Fortran device arrays (tests/gpu/fortran_device.F90, built with use mpi and with use mpi_f08) on
# 2 ranks sharing the GPU under MPIZip: the ranks on one node, then every rank its own node
# (MPIZIP_FORCE_INTERNODE=1) with statistics and compression forced (MPIZIP_COMPRESS=always: the
# test is of the Fortran path, not of the cost model's choice on the MPI library's link), where the
# REAL messages must have been compressed on the GPU and every Fortran call counted under its C name. Each run checks every result bit for
# bit. Skipped (77) without a GPU or without an MPI Fortran compiler (configure's MPIFC).
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
for flavour in usempi f08; do
  prog="$MPIZIP_BUILDDIR/tests/gpu/fortran_device_$flavour"
  [ -x "$prog" ] || { echo "SKIP: $prog not built (no MPI Fortran compiler)"; exit 77; }
  "$prog" probe >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
  out=$(run_mpi mpizip 2 "$prog" 2>&1) || fail "$flavour, one node: $out"
  echo "$out"
  [ "$(echo "$out" | grep -c ": ok$")" = 2 ] || fail "$flavour, one node: not ok on both ranks"

  out=$(MPIZIP_TEST_ENV="MPIZIP_FORCE_INTERNODE=1 MPIZIP_COMPRESS=always MPIZIP_STATS=1" run_mpi mpizip 2 "$prog" 2>&1) ||
    fail "$flavour, a node per rank: $out"
  echo "$out"
  [ "$(echo "$out" | grep -c ": ok$")" = 2 ] || fail "$flavour, a node per rank: not ok on both ranks"
  world="stats: comm 0 MPI_COMM_WORLD, 2 ranks:"
  r0=$(echo "$out" | grep "^\[mpizip 0\] $world MPI_")
  r1=$(echo "$out" | grep "^\[mpizip 1\] $world MPI_")
  # (an entry ends with ';', or the line)
  echo "$r0" | grep -Eq "MPI_Send calls=2 bytes=33554432(;|$)" || fail "$flavour: rank 0's MPI_Send not counted"
  echo "$r1" | grep -q "MPI_Probe calls=1 " || fail "$flavour: rank 1's MPI_Probe not counted"
  for line in "$r0" "$r1"; do
    echo "$line" | grep -Eq "MPI_Allreduce calls=2 bytes=33554432(;|$)" ||
      fail "$flavour: MPI_Allreduce not counted"
    echo "$line" | grep -q "MPI_Isend calls=1 " || fail "$flavour: MPI_Isend not counted"
  done
  # Rank 1 received three 16 MiB REAL messages, rank 0 one: each compressed on the GPU.
  echo "$out" | grep "^\[mpizip 1\] $world protocol:" | grep -q "received fp32 messages=3 compressed=3 " ||
    fail "$flavour: rank 1's device REAL messages were not all compressed"
  echo "$out" | grep "^\[mpizip 0\] $world protocol:" | grep -q "received fp32 messages=1 compressed=1 " ||
    fail "$flavour: rank 0's device REAL message was not compressed"
done
exit 0
