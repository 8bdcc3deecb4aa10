#!/bin/sh
# Builds MPIZip's fuzz targets with clang's libFuzzer, AddressSanitizer and UBSan straight from the
# sources, writes each target's seed corpus of valid inputs (make_corpus.cc), replays the inputs
# that once failed (tests/fuzz/regress/TARGET/), then fuzzes every target for SECONDS (default 60),
# FUZZ_JOBS targets at a time (default: one per core).
#   tests/fuzz/run.sh [SECONDS] [libFuzzer flags...]
# Targets (FUZZ_TARGETS, default all), each a parser of bytes from a peer:
#   decode        the CPU decoder (kernels/codec_cpu.h): any stream, re-encoded when accepted
#   decode_fast   the same decoder seeded with fast streams (version 3), re-encoded in fast mode
#   match_header  the match message (p2p/wire.h parse_header) and the receiver acting on it
#                 (p2p/recv.cc: inline, bulk, split and chunked payloads from a fake transport)
#   hello         the two-shot allreduce's hello (coll/wire.h parse_hello, compare_hello)
#   chunked       chunked payloads (p2p/chunked.h ChunkedReceiver), the CPU decoder the oracle
# Needs clang++ with the fuzzer runtime (Debian: clang and libclang-rt-dev of the same version) and
# an MPI compiler wrapper (the receivers include mpi.h). FUZZ_DIR (default /tmp/mpizip-fuzz) keeps
# the binaries, the seeds, the growing corpora (DIR/TARGET/corpus) and each run's log.
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FUZZ_DIR:-/tmp/mpizip-fuzz}
cxx=${CLANGXX:-clang++}
targets=${FUZZ_TARGETS:-decode decode_fast match_header hello chunked}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
mpicxx=${MPICXX:-mpicxx}
mpi_cflags=$($mpicxx --showme:compile 2>/dev/null || $mpicxx -compile_info | cut -d' ' -f2- | tr ' ' '\n' | grep '^-I' | tr '\n' ' ')
mpi_libs=$($mpicxx --showme:link 2>/dev/null || $mpicxx -link_info | cut -d' ' -f2- | tr ' ' '\n' | grep '^-[lLW]' | tr '\n' ' ')
codec="kernels/codec_cpu.cc kernels/encode_cpu.cc kernels/decode_cpu.cc kernels/fast_cpu.cc kernels/split_cpu.cc
       kernels/ans_cpu.cc kernels/ans_simd_cpu.cc src/platform/status.cc"
recv="p2p/recv.cc p2p/wire.cc p2p/chunked.cc p2p/probed_queue.cc p2p/gpu_codec_none.cc
      src/platform/buffers.cc src/platform/log.cc src/platform/device_none.cc"
san="-std=c++20 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined"
mkdir -p "$dir/obj"
cd "$top"

# Every source once, in parallel; a target links the objects it needs. The code a target fuzzes
# is instrumented for coverage; the CPU codec under the receivers is not (fuzz_decode covers it),
# which keeps their runs fast and their search on the receivers' own branches.
obj() { echo "$dir/obj/$(echo "$1" | tr / _).o"; }
cov() { echo "$dir/obj/cov_$(echo "$1" | tr / _).o"; }
{
  for s in $codec $recv coll/wire.cc; do echo "$s $(cov "$s") -fsanitize=fuzzer-no-link"; done
  for s in $codec; do echo "$s $(obj "$s") -g"; done
} | xargs -P "$jobs" -n 3 sh -c "$cxx $san \$2 -I. $mpi_cflags -c \"\$0\" -o \"\$1\""
objs() { for s in "$@"; do obj "$s"; done; }
covs() { for s in "$@"; do cov "$s"; done; }
for t in $targets; do
  case $t in
    decode | decode_fast) extra=$(covs $codec) ;;
    match_header | chunked) extra="$(objs $codec) $(covs $recv) $mpi_libs" ;;
    hello) extra=$(cov coll/wire.cc) ;;
    *) echo "run.sh: unknown target $t" >&2; exit 2 ;;
  esac
  rm -f "$dir/fuzz_$t"
  # shellcheck disable=SC2086
  $cxx $san -fsanitize=fuzzer -I. $mpi_cflags "tests/fuzz/fuzz_$t.cc" $extra -pthread \
      -o "$dir/fuzz_$t" &
done
wait
# shellcheck disable=SC2086
$cxx -std=c++20 -O1 -I. $mpi_cflags tests/fuzz/make_corpus.cc $codec coll/wire.cc p2p/wire.cc \
    -o "$dir/make_corpus" -pthread
for t in $targets; do
  [ -x "$dir/fuzz_$t" ] || { echo "run.sh: fuzz_$t did not build" >&2; exit 1; }
  rm -rf "$dir/$t/seeds"
  mkdir -p "$dir/$t/seeds" "$dir/$t/corpus"
  "$dir/make_corpus" "$t" "$dir/$t/seeds"
  if [ -d "tests/fuzz/regress/$t" ]; then
    "$dir/fuzz_$t" -runs=1 "tests/fuzz/regress/$t"/* 2>"$dir/$t/regress.log" ||
      { cat "$dir/$t/regress.log"; echo "run.sh: fuzz_$t fails on a regression input" >&2; exit 1; }
  fi
done

# Fuzz, FUZZ_JOBS targets at a time (in batches: dash has no `wait -n`).
run_one() {
  t=$1
  shift
  "$dir/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=2048 \
      -artifact_prefix="$dir/$t/" "$@" "$dir/$t/corpus" "$dir/$t/seeds" >"$dir/$t/fuzz.log" 2>&1
}
report() {
  stats=$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$dir/$1/fuzz.log" |
          sed 's/^stat:://; s/ *: */=/' | tr '\n' ' ')
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$dir/$1/fuzz.log" | tail -1)
  echo "fuzz_$1: $2 ($stats$cov)"
  [ "$2" = ok ] || tail -40 "$dir/$1/fuzz.log"
}
status=0
batch=""
n=0
for t in $targets; do
  run_one "$t" "$@" &
  batch="$batch $!:$t"
  n=$((n + 1))
  if [ "$n" -ge "$jobs" ] || [ "$t" = "${targets##* }" ]; then
    for p in $batch; do
      if wait "${p%%:*}"; then report "${p#*:}" ok; else report "${p#*:}" FAILED; status=1; fi
    done
    batch=""
    n=0
  fi
done
exit $status
