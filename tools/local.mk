# tools: mpizip-info and mpizip-run.
bin_PROGRAMS += tools/mpizip-info
tools_mpizip_info_SOURCES = tools/mpizip-info.cc
tools_mpizip_info_CPPFLAGS = $(AM_CPPFLAGS) -DMPI_FLAVOR='"$(mpizip_mpi_flavor)"'
tools_mpizip_info_LDADD = libmpizip_core.la
bin_SCRIPTS += tools/mpizip-run
EXTRA_DIST += tools/mpizip-run.in tools/install-deps.sh
DISTCLEANFILES += tools/mpizip-run
