# Per-communicator hints (src/core/comm_hints.h): MPI_Comm_set_info, MPI_Comm_dup_with_info and
# MPI_Comm_get_info on 2-4 ranks, the protocol forced on host buffers.
check_PROGRAMS += tests/mpi/hints
tests_mpi_hints_SOURCES = tests/mpi/hints.c
tests_mpi_hints_LDADD = -ldl
TESTS += tests/mpi/hints.sh
EXTRA_DIST += tests/mpi/hints.sh
