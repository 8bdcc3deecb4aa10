#!/bin/sh
# The installed tree works as the README says. `make install` of this build (staged under a scratch
# DESTDIR, so the configured prefix is left alone) puts mpizip-run, mpizip-info, libmpizip.so,
# mpizip.h and mpizip.pc in place, and:
#   - the installed mpizip-run names no unexpanded installation variable, looks for the library
#     exactly where make install put it, and launches a program with MPIZip in every rank;
#   - the installed mpizip-info runs and reports the installed version;
#   - `pkg-config --cflags --libs mpizip` (PKG_CONFIG_PATH into the installation) gives flags that
#     compile a program against the installed mpizip.h and link it with the installed libmpizip.so,
#     which then runs with MPIZip active on every rank.
# With MPIZIP_INSTALLED_PREFIX set, the test installs nothing and checks the installation made
# there by `./configure --prefix=... && make && make install` (check.sh does so): mpizip-run then
# runs without MPIZIP_LIB, finding the library by itself.
# Environment: that of every MPI test (tests/mpi/lib.sh), and MPIZIP_MPICC, the MPI C compiler of
# the build.
. "$(dirname "$0")/mpi/lib.sh"
[ -n "${MPIZIP_MPICC:-}" ] || fail "MPIZIP_MPICC, the MPI C compiler of the build, is not set"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpizip-install.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

if [ -n "${MPIZIP_INSTALLED_PREFIX:-}" ]; then
  root=""
  top=$MPIZIP_INSTALLED_PREFIX
  [ -d "$top" ] || fail "MPIZIP_INSTALLED_PREFIX=$top is not a directory"
  echo "installed tree: $top"
else
  root=$tmp/stage
  top=$root
  # A make of its own: not the jobs, variables or options of the make running the tests.
  if ! (cd "$MPIZIP_BUILDDIR" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
          ${MAKE:-make} install DESTDIR="$root") >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    fail "make install DESTDIR=$root failed"
  fi
  echo "make install DESTDIR=$root"
fi

# installed NAME: the one installed file of that name, as its path once installed (without the
# DESTDIR).
installed() {
  _found=$(cd "$top" && find . -name "$1" \( -type f -o -type l \) | sed 's|^\.||')
  [ -n "$_found" ] || fail "make install did not install $1"
  [ "$(echo "$_found" | wc -l)" = 1 ] || fail "more than one $1 installed: $_found"
  echo "${top#"$root"}$_found"
}
run_script=$(installed mpizip-run)
info=$(installed mpizip-info)
lib=$(installed libmpizip.so)
pc=$(installed mpizip.pc)
header=$(installed mpizip.h)
libdir=${lib%/*}
printf '  %s\n' "$run_script" "$info" "$lib" "$pc" "$header"
[ -x "$root$run_script" ] || fail "$run_script is not executable"

# mpizip-run: every installation path expanded, the library where make install put it.
bad=$(grep -n '@[A-Za-z_]*@\|\${\{0,1\}\(exec_prefix\|prefix\|libdir\|datarootdir\)\b' "$root$run_script") &&
  fail "$run_script holds unexpanded configure or installation variables: $bad"
# What it would preload without MPIZIP_LIB: it prints the path it looks for when the file is not
# there (a staged installation), or hands it to the launcher, here one that prints its arguments.
printf '#!/bin/sh\nprintf "%%s\\n" "$@"\n' > "$tmp/print-args"
chmod +x "$tmp/print-args"
looked=$(env -u MPIZIP_LIB -u LD_PRELOAD MPIRUN="$tmp/print-args" MPIRUN_ENV_OPTION=-x \
         "$root$run_script" ./program 2>&1 |
         sed -n 's|^LD_PRELOAD=||p; s|^mpizip-run: \(.*\) not found (set MPIZIP_LIB)$|\1|p')
[ "$looked" = "$lib" ] ||
  fail "the installed mpizip-run looks for the library at '$looked', make install put it at $lib"
echo "mpizip-run looks for $looked"

# mpizip-run launches the smoke program with MPIZip in both ranks (a staged installation: pointed at
# the staged library, as the path checked above is where it would be).
if [ -n "$root" ]; then use_lib="MPIZIP_LIB=$root$lib"; else use_lib="-u MPIZIP_LIB"; fi
# shellcheck disable=SC2086
out=$(env $use_lib MPIZIP_STATS=1 "$root$run_script" $launch_flags $(env_flag MPIZIP_STATS=1) -np 2 \
      "$MPIZIP_BUILDDIR/tests/mpi/smoke" 2>&1) || fail "the installed mpizip-run failed: $out"
echo "$out" | grep -q "smoke: ok on 2 ranks" || fail "smoke output missing from: $out"
for r in 0 1; do
  echo "$out" | grep -q "^\[mpizip $r\] stats: comm 0 MPI_COMM_WORLD" ||
    fail "rank $r did not load MPIZip under the installed mpizip-run: $out"
done
echo "mpizip-run: smoke ok on 2 ranks, MPIZip in both"

# pkg-config: the installed mpizip.pc, found through PKG_CONFIG_PATH; a staged installation is the
# system root of its paths.
PKG_CONFIG_PATH="$root$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
if [ -n "$root" ]; then PKG_CONFIG_SYSROOT_DIR=$root; export PKG_CONFIG_SYSROOT_DIR; fi
[ "$root$pc" = "$root$libdir/pkgconfig/mpizip.pc" ] || fail "mpizip.pc is at $pc, not in $libdir/pkgconfig"
pc_version=$(pkg-config --modversion mpizip) || fail "pkg-config does not find mpizip"
pc_libdir=$(pkg-config --variable=libdir mpizip)
[ "$pc_libdir" = "$root$libdir" ] || fail "mpizip.pc's libdir is '$pc_libdir', not $root$libdir"
libs=$(pkg-config --libs mpizip) || fail "pkg-config --libs mpizip failed"
cflags=$(pkg-config --cflags mpizip) || fail "pkg-config --cflags mpizip failed"
echo "pkg-config: mpizip $pc_version, --cflags $cflags --libs $libs"
echo " $libs " | grep -q -- " -lmpizip " || fail "pkg-config --libs mpizip lacks -lmpizip: $libs"

# mpizip-info: runs and reports the version mpizip.pc gives.
info_out=$("$root$info" 2>&1) || fail "the installed mpizip-info failed: $info_out"
echo "$info_out" | head -1 | grep -qx "MPIZip $pc_version" ||
  fail "the installed mpizip-info does not report MPIZip $pc_version: $(echo "$info_out" | head -3)"
echo "mpizip-info: $(echo "$info_out" | head -1)"
# ... and which progress is in force, following MPIZIP_PROGRESS_THREAD.
echo "$info_out" | grep -q "^  helper       on where the protocol runs (MPIZIP_PROGRESS_THREAD=auto)" ||
  fail "mpizip-info does not say which progress is in force"
off_out=$(MPIZIP_PROGRESS_THREAD=off "$root$info" 2>&1)
echo "$off_out" | grep -q "^  helper       off (MPIZIP_PROGRESS_THREAD=off)" ||
  fail "mpizip-info does not report the helper thread off"

# A program built with pkg-config's flags alone against the installed header and library.
cat > "$tmp/linked.c" <<'EOF'
#include <mpi.h>
#include <mpizip.h>
#include <stdio.h>
#include <string.h>
#define N 100000
static double out[N], in[N];
int main(int argc, char** argv) {
  int rank, size, one = 1, sum = 0, ok = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < N; ++i) out[i] = rank + i * 0.25;
  MPI_Sendrecv(out, N, MPI_DOUBLE, (rank + 1) % size, 3, in, N, MPI_DOUBLE, (rank + size - 1) % size,
               3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  for (int i = 0; i < N; ++i) ok &= in[i] == (rank + size - 1) % size + i * 0.25;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ok &= sum == size && MPIZip_Active() && strcmp(MPIZip_Version(), VERSION) == 0;
  printf("linked rank %d: MPIZip %s, active %d, %s\n", rank, MPIZip_Version(), MPIZip_Active(),
         ok ? "ok" : "WRONG");
  MPI_Finalize();
  return !ok;
}
EOF
# shellcheck disable=SC2086
$MPIZIP_MPICC -DVERSION="\"$pc_version\"" $cflags -o "$tmp/linked" "$tmp/linked.c" $libs >"$tmp/cc.log" 2>&1 ||
  fail "$MPIZIP_MPICC with pkg-config's flags failed: $(cat "$tmp/cc.log")"
resolved=$(LD_LIBRARY_PATH="$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$tmp/linked" |
           sed -n 's|^[[:space:]]*libmpizip\.so[.0-9]* => \([^ ]*\) .*|\1|p')
case $resolved in
  "$root$libdir"/libmpizip.so*) ;;
  *) fail "the program links libmpizip as '$resolved', not from $root$libdir" ;;
esac
out=$(MPIZIP_TEST_ENV="LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      run_mpi plain 2 "$tmp/linked" 2>&1) || fail "the program linked by pkg-config's flags failed: $out"
echo "$out"
[ "$(echo "$out" | grep -c '^linked rank [01]: MPIZip .*, active 1, ok$')" = 2 ] ||
  fail "the program linked by pkg-config's flags did not run with MPIZip on both ranks"
echo "install: ok"
