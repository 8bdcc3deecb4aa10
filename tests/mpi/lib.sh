# Shared by the MPI integration tests: launch a program with and without MPIZip preloaded.
# Environment (exported by the top Makefile.am): MPIRUN, MPIZIP_BUILDDIR, MPIZIP_LIB.
set -u
: "${MPIRUN:=mpirun}"
: "${MPIZIP_BUILDDIR:=.}"
: "${MPIZIP_LIB:=$MPIZIP_BUILDDIR/.libs/libmpizip.so}"

if "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
  launch_flags="--oversubscribe --mca btl_vader_single_copy_mechanism none"
  [ "$(id -u)" = 0 ] && launch_flags="$launch_flags --allow-run-as-root"
  preload_flag() { printf -- '-x LD_PRELOAD=%s' "$1"; }
  env_flag() { printf -- '-x %s' "$1"; }
else
  launch_flags=""
  preload_flag() { printf -- '-genv LD_PRELOAD %s' "$1"; }
  env_flag() { printf -- '-genv %s %s' "${1%%=*}" "${1#*=}"; }
fi

fail() { echo "FAIL: $*" >&2; exit 1; }

# Sets py to the first of $PYTHON, python3 and /usr/bin/python3 that has mpi4py and NumPy; exits 77
# (skipped) when none has.
find_python() {
  py=""
  for c in ${PYTHON:-} python3 /usr/bin/python3; do
    c=$(command -v "$c" 2>/dev/null) || continue
    if "$c" -c 'import mpi4py, numpy' 2>/dev/null; then py=$c; return 0; fi
  done
  echo "SKIP: no python3 with mpi4py and numpy"
  exit 77
}

# run_mpi MODE NP PROGRAM [ARGS...]: MODE is plain or mpizip. Extra MPIZIP_* settings are passed
# through the environment variables named in MPIZIP_TEST_ENV (space-separated NAME=VALUE).
run_mpi() {
  # Names of its own (sh has no locals): callers loop over variables of their own.
  _run_mode=$1; _run_np=$2; shift 2
  _run_extra=""
  for _run_kv in ${MPIZIP_TEST_ENV:-}; do _run_extra="$_run_extra $(env_flag "$_run_kv")"; done
  if [ "$_run_mode" = mpizip ]; then
    # shellcheck disable=SC2086
    "$MPIRUN" $launch_flags -np "$_run_np" $(preload_flag "$MPIZIP_LIB") $_run_extra "$@"
  else
    # shellcheck disable=SC2086
    "$MPIRUN" $launch_flags -np "$_run_np" $_run_extra "$@"
  fi
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
