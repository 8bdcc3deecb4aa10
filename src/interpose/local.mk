# src/interpose: the MPI_* entry points of libmpizip.so, generated from the routing table.
libmpizip_la_SOURCES += src/interpose/wrappers.cc
# dlsym(RTLD_NEXT): the MPI library's own MPIX_Query_cuda_support.
libmpizip_la_LIBADD += -ldl
EXTRA_DIST += src/interpose/mpi_calls.def
