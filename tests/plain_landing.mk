# Receives into host buffers larger than the bare size, the protocol on: the MPI library's own
# receive and request, through every completion call, for plain and match messages.
check_PROGRAMS += tests/mpi/plain_landing
tests_mpi_plain_landing_SOURCES = tests/mpi/plain_landing.c
tests_mpi_plain_landing_LDADD = -ldl
TESTS += tests/mpi/plain_landing.sh
EXTRA_DIST += tests/mpi/plain_landing.sh
