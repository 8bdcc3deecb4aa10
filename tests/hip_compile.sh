#!/bin/sh
# The GPU kernels compile for AMD GPUs with HIP (gfx90a) from the same sources as for CUDA. Needs
# hipcc (Debian: hipcc, libamdhip64-dev); exit 77 (skip) without it. The files compile side by side,
# at -O1: the check is that the sources compile for AMD, front end and code generation; -O3's further
# passes only make it longer (codec_gpu.cu: 110 s against 160 s on two cores).
set -u
src=${MPIZIP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
command -v hipcc >/dev/null 2>&1 || { echo "hip_compile: no hipcc, skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Longest first (two cores: encode_wide.cu, 68 s, on one, the rest, 69 s together, on the other),
# HIP_COMPILE_JOBS at a time (default: one per core): all seven at once took 122-191 s on two cores
# against 75-85 s so.
files="kernels/encode_wide.cu kernels/encode_stream.cu kernels/codec_gpu.cu kernels/reduce_gpu.cu
       coll/backend_gpu.cu kernels/encode_narrow.cu kernels/encode_mid.cu"
jobs=${HIP_COMPILE_JOBS:-$(nproc 2>/dev/null || echo 2)}
export src out
# shellcheck disable=SC2016
echo $files | tr ' ' '\n' | xargs -P "$jobs" -I{} sh -c '
  b=$(basename "$1")
  if hipcc --offload-arch=gfx90a -std=c++20 -O1 -DMPIZIP_HIP -I"$src" -I"$src/include" -x hip \
       -c "$src/$1" -o "$out/$b.o" > "$out/$b.log" 2>&1; then
    echo ok > "$out/$b.status"
  fi' sh {}
status=0
for f in $files; do
  b=$(basename "$f")
  if [ -f "$out/$b.status" ]; then
    echo "hip_compile: $f compiled for gfx90a"
  else
    cat "$out/$b.log"
    echo "hip_compile: $f failed"
    status=1
  fi
done
exit $status
