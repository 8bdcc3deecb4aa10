# src/interpose: the MPI_* entry points of libmpizip.so, generated from the routing table.
libmpizip_la_SOURCES += src/interpose/wrappers.cc
EXTRA_DIST += src/interpose/mpi_calls.def
