# tools: mpizip-info and mpizip-run.
bin_PROGRAMS += tools/mpizip-info
tools_mpizip_info_SOURCES = tools/mpizip-info.cc
tools_mpizip_info_CPPFLAGS = $(AM_CPPFLAGS) -DMPI_FLAVOR='"$(mpizip_mpi_flavor)"'
tools_mpizip_info_LDADD = libmpizip_core.la
bin_SCRIPTS += tools/mpizip-run
EXTRA_DIST += tools/mpizip-run.in tools/install-deps.sh
# mpizip-run is written by make, not configure: configure's @libdir@ is ${exec_prefix}/lib, which
# only make expands, and the script must name the installed library by its full path (the
# Autoconf manual, "Installation Directory Variables").
mpizip_run_edit = sed -e 's|@libdir[@]|$(libdir)|g' -e 's|@MPIRUN[@]|$(MPIRUN)|g' \
	-e 's|@MPIRUN_ENV_OPTION[@]|$(MPIRUN_ENV_OPTION)|g' \
	-e 's|@mpizip_mpi_flavor[@]|$(mpizip_mpi_flavor)|g'
tools/mpizip-run: $(srcdir)/tools/mpizip-run.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tools && rm -f $@ $@.tmp && \
	$(mpizip_run_edit) $(srcdir)/tools/mpizip-run.in > $@.tmp && \
	if grep -n '@[A-Za-z_]*@' $@.tmp; then echo "$@: unsubstituted" >&2; rm -f $@.tmp; exit 1; fi && \
	chmod +x $@.tmp && mv $@.tmp $@
CLEANFILES += tools/mpizip-run
