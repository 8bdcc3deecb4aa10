# src/interpose: the MPI_* entry points of libmpizip.so, generated from the routing table: the C
# ones by macros (wrappers.cc), the Fortran ones by fortran_gen, a program built here that reads
# the same table through the same macros and writes fortran_entries.cc.
libmpizip_la_SOURCES += src/interpose/wrappers.cc src/interpose/fortran.cc
nodist_libmpizip_la_SOURCES = src/interpose/fortran_entries.cc
noinst_HEADERS += src/interpose/calls.h src/interpose/fortran.h
# dlsym: the MPI library's own MPIX_Query_cuda_support, Fortran entry points and constants.
libmpizip_la_LIBADD += -ldl
EXTRA_DIST += src/interpose/mpi_calls.def

noinst_PROGRAMS += src/interpose/fortran_gen
src_interpose_fortran_gen_SOURCES = src/interpose/fortran_gen.cc
src/interpose/fortran_entries.cc: src/interpose/fortran_gen$(EXEEXT)
	$(AM_V_GEN)src/interpose/fortran_gen$(EXEEXT) > $@.tmp && mv $@.tmp $@
CLEANFILES += src/interpose/fortran_entries.cc src/interpose/fortran_entries.cc.tmp
