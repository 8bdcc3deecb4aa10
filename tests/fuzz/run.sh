#!/bin/sh
# Builds the CPU decoder's fuzz target with clang's libFuzzer, AddressSanitizer and UBSan straight
# from the sources, writes a seed corpus of valid streams, and fuzzes for SECONDS (default 60).
#   tests/fuzz/run.sh [SECONDS] [libFuzzer flags...]
# Needs clang++ with the fuzzer runtime (Debian: clang and libclang-rt-dev of the same version).
# FUZZ_DIR (default /tmp/mpizip-fuzz) keeps the binaries, the seeds and the growing corpus.
set -eu
secs=${1:-60}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${FUZZ_DIR:-/tmp/mpizip-fuzz}
cxx=${CLANGXX:-clang++}
sources="kernels/codec_cpu.cc kernels/encode_cpu.cc kernels/decode_cpu.cc kernels/split_cpu.cc
         kernels/ans_cpu.cc kernels/ans_simd_cpu.cc src/platform/status.cc"
mkdir -p "$dir/seeds" "$dir/corpus"
cd "$top"
$cxx -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I. \
    tests/fuzz/fuzz_decode.cc $sources -o "$dir/fuzz_decode"
$cxx -std=c++20 -O1 -I. tests/fuzz/make_corpus.cc $sources -o "$dir/make_corpus" -pthread
"$dir/make_corpus" "$dir/seeds"
exec "$dir/fuzz_decode" -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=4096 \
    -artifact_prefix="$dir/" "$@" \
    "$dir/corpus" "$dir/seeds"
