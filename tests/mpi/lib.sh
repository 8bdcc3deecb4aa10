# Shared by the MPI integration tests: launch a program with and without MPIZip preloaded.
# Environment (exported by the top Makefile.am): MPIZIP_BUILDDIR, MPIZIP_SRCDIR, MPIZIP_LIB, MPIRUN.
# How to launch under the configured MPI library (the launcher, its options, how it passes a
# variable to the ranks) comes from the build's tests/mpi/launcher.sh, which configure writes.
set -u
: "${MPIZIP_BUILDDIR:=.}"
: "${MPIZIP_LIB:=$MPIZIP_BUILDDIR/.libs/libmpizip.so}"
[ -f "$MPIZIP_BUILDDIR/tests/mpi/launcher.sh" ] ||
  { echo "FAIL: no $MPIZIP_BUILDDIR/tests/mpi/launcher.sh: set MPIZIP_BUILDDIR to a configured build" >&2; exit 1; }
. "$MPIZIP_BUILDDIR/tests/mpi/launcher.sh"
launch_flags=$MPIRUN_TEST_FLAGS

# env_flag NAME=VALUE: the launcher's option that sets the variable in every rank, for word
# splitting into a command line (the value without spaces).
env_flag() { printf -- '%s %s' "$MPIRUN_ENV_OPTION" "$1"; }

fail() { echo "FAIL: $*" >&2; exit 1; }

# Sets py to the first of $PYTHON, python3 and /usr/bin/python3 that has mpi4py and NumPy, with
# mpi4py built against the MPI library this build is (Debian's mpi4py is Open MPI's); exits 77
# (skipped) when none has.
find_python() {
  py=""; _py_why=""
  _py_mpi=$(ldd "$MPIZIP_LIB" 2>/dev/null | grep -o 'lib\(mpi\|mpich\)[a-z_]*\.so[.0-9]*' | head -1)
  for c in ${PYTHON:-} python3 /usr/bin/python3; do
    c=$(command -v "$c" 2>/dev/null) || continue
    # The extension module's file, found without importing it (which initialises MPI).
    _py_ext=$("$c" -c 'import glob, os, mpi4py, numpy; print(glob.glob(os.path.join(os.path.dirname(mpi4py.__file__), "MPI.*.so"))[0])' 2>/dev/null) || continue
    if [ -n "$_py_mpi" ] && ! ldd "$_py_ext" 2>/dev/null | grep -q "$_py_mpi"; then
      _py_why="the mpi4py of $c is not built against $_py_mpi, which this build uses"
      continue
    fi
    py=$c
    return 0
  done
  echo "SKIP: ${_py_why:-no python3 with mpi4py and numpy}"
  exit 77
}

# run_mpi MODE NP PROGRAM [ARGS...]: MODE is plain or mpizip. Extra settings reach every rank
# through MPIZIP_TEST_ENV: space-separated NAME=VALUE, or NAME alone for this shell's value.
run_mpi() {
  # Names of its own (sh has no locals): callers loop over variables of their own.
  _run_mode=$1; _run_np=$2; shift 2
  # The launcher's options for the settings go after the program and its arguments, which are
  # then rotated to the end: a value may hold spaces.
  _run_n=$#
  for _run_kv in ${MPIZIP_TEST_ENV:-}; do
    case $_run_kv in
      *=*) set -- "$@" "$MPIRUN_ENV_OPTION" "$_run_kv" ;;
      *) eval "set -- \"\$@\" \"\$MPIRUN_ENV_OPTION\" \"$_run_kv=\${$_run_kv-}\"" ;;
    esac
  done
  [ "$_run_mode" = mpizip ] && set -- "$@" "$MPIRUN_ENV_OPTION" "LD_PRELOAD=$MPIZIP_LIB"
  while [ "$_run_n" -gt 0 ]; do set -- "$@" "$1"; shift; _run_n=$((_run_n - 1)); done
  # shellcheck disable=SC2086
  "$MPIRUN" $launch_flags -np "$_run_np" "$@"
}

# run_mpi_preload LIBS NP PROGRAM [ARGS...]: as run_mpi mpizip, preloading LIBS (colon-separated).
run_mpi_preload() {
  libs=$1; shift
  MPIZIP_LIB="$libs" run_mpi mpizip "$@"
}

# both NP PROGRAM [ARGS...]: the program must pass plain and with MPIZip.
both() {
  for mode in plain mpizip; do
    run_mpi "$mode" "$@" || fail "$mode run of $* failed"
  done
}
