# The installed tree (tests/install.sh): make install, staged under a scratch DESTDIR, then the
# installed mpizip-run, mpizip-info and pkg-config's flags for mpizip, each used as the README says.
# It compiles a program with the build's MPI C compiler (MPIZIP_MPICC).
TESTS += tests/install.sh
EXTRA_DIST += tests/install.sh
AM_TESTS_ENVIRONMENT += MPIZIP_MPICC='$(CC)'; export MPIZIP_MPICC;
