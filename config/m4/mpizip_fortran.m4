# MPIZIP_FORTRAN: the MPI Fortran compiler ($MPIFC, default: mpifort beside $MPICC), for the
# Fortran tests (tests/fortran) only: libmpizip's Fortran entry points are C++ and need no Fortran
# compiler. Optional: without one that builds mpif.h, use mpi and use mpi_f08 programs, those
# tests are skipped. MPIFCFLAGS: the flags they are built with (gfortran 10 and later need
# -fallow-argument-mismatch for mpif.h programs that pass buffers of several types).
AC_DEFUN([MPIZIP_FORTRAN], [
  AC_ARG_VAR([MPIFC], [MPI Fortran compiler for the Fortran tests (default: mpifort beside MPICC)])
  AS_IF([test -z "$MPIFC"], [MPIFC=`echo "$MPICC" | sed 's/mpicc/mpifort/'`])
  mpizip_have_mpifc=no
  MPIFCFLAGS="-O1 -ffree-line-length-none"
  AC_MSG_CHECKING([whether $MPIFC builds mpif.h, use mpi and use mpi_f08 programs])
  mkdir conftest.dir && cd conftest.dir && cat > f08.f90 <<_MPIZIP_EOF
program t
use mpi_f08
call MPI_Init()
call MPI_Finalize()
end program
_MPIZIP_EOF
  cat > usempi.f90 <<_MPIZIP_EOF
program t
use mpi
integer ierr
call MPI_Init(ierr)
call MPI_Finalize(ierr)
end program
_MPIZIP_EOF
  cat > mpifh.f90 <<_MPIZIP_EOF
program t
include 'mpif.h'
integer ierr
real a(2)
integer b(2)
call MPI_Bcast(a, 2, MPI_REAL, 0, MPI_COMM_WORLD, ierr)
call MPI_Bcast(b, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
end program
_MPIZIP_EOF
  AS_IF([$MPIFC -fallow-argument-mismatch -c mpifh.f90 >&AS_MESSAGE_LOG_FD 2>&1],
        [MPIFCFLAGS="$MPIFCFLAGS -fallow-argument-mismatch"])
  AS_IF([$MPIFC $MPIFCFLAGS -o f08 f08.f90 >&AS_MESSAGE_LOG_FD 2>&1 &&
         $MPIFC $MPIFCFLAGS -o usempi usempi.f90 >&AS_MESSAGE_LOG_FD 2>&1 &&
         $MPIFC $MPIFCFLAGS -c mpifh.f90 >&AS_MESSAGE_LOG_FD 2>&1],
        [mpizip_have_mpifc=yes])
  cd .. && rm -rf conftest.dir
  AC_MSG_RESULT([$mpizip_have_mpifc])
  AC_SUBST([MPIFCFLAGS])
  AM_CONDITIONAL([HAVE_MPIFC], [test "x$mpizip_have_mpifc" = xyes])
])
