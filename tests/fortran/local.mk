# tests/fortran: Fortran programs under the preload. fortran_calls.F90 is built three times, with
# mpif.h, use mpi and use mpi_f08, by the MPI Fortran compiler configure found (MPIFC); without
# one the scripts skip (77). c_layer_probe is a C-level PMPI tool that shows which layer the MPI
# library's Fortran bindings call.
check_LTLIBRARIES += tests/fortran/libc_layer_probe.la
tests_fortran_libc_layer_probe_la_SOURCES = tests/fortran/c_layer_probe.c
tests_fortran_libc_layer_probe_la_LDFLAGS = -module -avoid-version -rpath /nowhere

FORTRAN_CALLS = tests/fortran/fortran_calls_mpifh tests/fortran/fortran_calls_usempi \
	tests/fortran/fortran_calls_f08
if HAVE_MPIFC
# Programs, built by the rules below rather than as check_PROGRAMS (automake's own Fortran support
# would make a Fortran compiler a requirement of every build).
check_SCRIPTS += $(FORTRAN_CALLS)
endif
FORTRAN_CALLS_SRC = $(srcdir)/tests/fortran/fortran_calls.F90
FORTRAN_EXPECT = $(srcdir)/tests/fortran/expect.inc
tests/fortran/fortran_calls_mpifh: $(FORTRAN_CALLS_SRC) $(FORTRAN_EXPECT)
	$(AM_V_GEN)$(MKDIR_P) tests/fortran && $(MPIFC) $(MPIFCFLAGS) -DMPIF_H -o $@ $(FORTRAN_CALLS_SRC)
tests/fortran/fortran_calls_usempi: $(FORTRAN_CALLS_SRC) $(FORTRAN_EXPECT)
	$(AM_V_GEN)$(MKDIR_P) tests/fortran && $(MPIFC) $(MPIFCFLAGS) -DUSE_MPI -o $@ $(FORTRAN_CALLS_SRC)
tests/fortran/fortran_calls_f08: $(FORTRAN_CALLS_SRC) $(FORTRAN_EXPECT)
	$(AM_V_GEN)$(MKDIR_P) tests/fortran && $(MPIFC) $(MPIFCFLAGS) -DF08 -o $@ $(FORTRAN_CALLS_SRC)
CLEANFILES += $(FORTRAN_CALLS)

TESTS += tests/fortran/layers.sh tests/fortran/fortran.sh
EXTRA_DIST += tests/fortran/layers.sh tests/fortran/fortran.sh tests/fortran/fortran_calls.F90 tests/fortran/expect.inc
