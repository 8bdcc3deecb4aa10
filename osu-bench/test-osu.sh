#!/bin/bash
# Tests of the OSU-style benchmarks, fast enough for two cores: the weights extractor on a
# hand-made model; every program with -c on host buffers for a few sizes and every element type
# (two ranks, and three for the collectives), cycling through the data kinds; the v-collectives'
# uneven counts, the barrier and the non-blocking collectives; option errors; and the compare
# runner's table, JSON and plot.
set -euo pipefail

build=${MPIZIP_BUILDDIR:?run from make check}
src=${MPIZIP_SRCDIR:?run from make check}
bench=$build/osu-bench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The launcher and its options under the configured MPI library (tests/mpi/launcher.sh, written by
# configure): MPIRUN, MPIRUN_TEST_FLAGS, MPIRUN_ENV_OPTION.
. "$build/tests/mpi/launcher.sh"
read -r -a launcher <<< "$MPIRUN $MPIRUN_TEST_FLAGS"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- The extractor, on a model with one Constant node (raw_data), one node without a tensor, a
# FLOAT initializer (packed float_data) and an INT64 initializer, which must be skipped.
constant_node='\x0a\x25\x12\x01c\x22\x08Constant\x2a\x16\x0a\x05value\x2a\x0a\x08\x01\x10\x01\x4a\x04\x00\x00\x40\x40\xa0\x01\x04'
relu_node='\x0a\x06\x22\x04Relu'
float_init='\x2a\x0e\x08\x02\x10\x01\x22\x08\x00\x00\x80\x3f\x00\x00\x00\x40'
int64_init='\x2a\x0e\x08\x01\x10\x07\x4a\x08\x01\x00\x00\x00\x00\x00\x00\x00'
printf '\x08\x07\x3a\x4f'"$constant_node$relu_node$float_init$int64_init" > "$work/model.onnx"
printf '\x00\x00\x40\x40\x00\x00\x80\x3f\x00\x00\x00\x40' > "$work/expected.bin"  # 3, 1, 2
if "$bench/data/onnx_weights" "$work/real.bin" "$work/model.onnx" > "$work/extract.log"; then
  cmp -s "$work/real.bin" "$work/expected.bin" || fail "extractor wrote $(od -An -tx1 "$work/real.bin")"
  grep -q 'total: 3 fp32 weights' "$work/extract.log" || fail "extractor count: $(cat "$work/extract.log")"
else
  fail "extractor failed on a valid model"
fi
head -c 40 "$work/model.onnx" > "$work/truncated.onnx"
"$bench/data/onnx_weights" "$work/bad.bin" "$work/truncated.onnx" > /dev/null 2>&1 &&
  fail "extractor accepted a truncated model"
export MPIZIP_REAL_WEIGHTS=$work/real.bin

# --- Every program with -c: runs, prints one Pass row per size and no Fail.
# run_check NAME EXPECTED_ROWS NP PROGRAM ARGS...
run_check() {
  local name=$1 rows=$2 np=$3; shift 3
  local out=$work/out status=0
  "${launcher[@]}" -np "$np" "$@" > "$out" 2>&1 || status=$?
  if [ $status != 0 ]; then
    fail "$name: exit status $status ($*)"; cat "$out"; return
  fi
  local pass
  pass=$(grep -c ' Pass$' "$out" || true)
  if [ "$pass" != "$rows" ] || grep -q ' Fail$' "$out"; then
    fail "$name: $pass Pass rows, $rows expected ($*)"; cat "$out"
  fi
}

types=(float double bf16 fp16 fp8e4m3 fp8e5m2)
log2_size=(2 3 1 1 0 0)  # log2 of the bytes per element
kinds=(uniform normal real constant)
common=(-c -i 5 -x 1 -m 1:32768)  # both OSU loop counts: sizes up to 32 KiB
kind() { echo "${kinds[$(( (t + $1) % ${#kinds[@]} ))]}"; }  # cycles through the kinds with t
for t in "${!types[@]}"; do
  type=${types[t]}
  rows=$(( 16 - log2_size[t] ))  # powers of two from the element size to 32 KiB
  args=("${common[@]}" -T "$type")
  run_check "osu_latency $type" "$rows" 2 "$bench/osu_latency" "${args[@]}" --data "$(kind 0)"
  run_check "osu_bw $type" "$rows" 2 "$bench/osu_bw" "${args[@]}" -W 4 --data "$(kind 1)"
  run_check "osu_bibw $type" "$rows" 2 "$bench/osu_bibw" "${args[@]}" -W 4 --data "$(kind 2)"
  # The collectives on three ranks, the general case of their exchanges (two is a special case).
  np=3
  run_check "osu_allreduce $type np=$np" "$rows" $np "$bench/osu_allreduce" "${args[@]}" \
    --data "$(kind 3)"
  run_check "osu_allgather $type np=$np" "$rows" $np "$bench/osu_allgather" "${args[@]}" \
    --data "$(kind 1)"
  run_check "osu_bcast $type np=$np" "$rows" $np "$bench/osu_bcast" "${args[@]}" \
    --data "$(kind 2)"
  run_check "osu_alltoall $type np=$np" "$rows" $np "$bench/osu_alltoall" "${args[@]}" \
    --data "$(kind 3)"
  # OSU's counts (with fewer elements than ranks, one each for the first); the block form skips
  # sizes with fewer elements than ranks (1 and 2).
  run_check "osu_reduce_scatter $type np=$np" "$rows" $np \
    "$bench/osu_reduce_scatter" "${args[@]}" --data "$(kind 2)"
  run_check "osu_reduce_scatter_block $type np=$np" "$((rows - 2))" $np \
    "$bench/osu_reduce_scatter_block" "${args[@]}" --data "$(kind 3)"
done

# OSU's default type (MPI_CHAR) through every program, the collectives on 3 ranks.
for prog in osu_latency osu_bw osu_allgather osu_bcast osu_alltoall osu_gather osu_scatter; do
  np=$([ "$prog" = osu_latency ] || [ "$prog" = osu_bw ] && echo 2 || echo 3)
  run_check "$prog char" 16 $np "$bench/$prog" "${common[@]}" -T char --data normal
done

# osu_reduce: the sum checked at the root (floats: any order within the bound). Not MPI_CHAR: Open
# MPI 4.1's AVX op component saturates 8-bit sums of 16 elements or more (open-mpi/ompi#8045),
# which -c rightly fails.
run_check "osu_reduce float np=3" 14 3 "$bench/osu_reduce" "${common[@]}" -T float --data uniform
run_check "osu_reduce double np=3" 13 3 "$bench/osu_reduce" "${common[@]}" -T double --data normal

# --- The v-collectives on three ranks: OSU's even counts, and --uneven (uneven counts, rank 1's
# zero, displacements out of rank order with gaps that must stay untouched); the barrier; the
# non-blocking collectives with OSU's overlap columns. Sizes 4 B to 1 KiB, few iterations.
small=(-c -i 3 -x 1 -m 4:1024)  # 9 sizes, 8 for 8-byte elements
run_check "osu_gatherv bf16" 9 3 "$bench/osu_gatherv" "${small[@]}" -T bf16 --data real
grep -q '^# Counts: every rank Size bytes, displacements their prefix sums' "$work/out" ||
  fail "osu_gatherv counts line"
run_check "osu_gatherv --uneven double" 8 3 "$bench/osu_gatherv" "${small[@]}" -T double --uneven
grep -q '^# Counts: --uneven, .*rank 1 none' "$work/out" || fail "osu_gatherv --uneven counts line"
run_check "osu_allgatherv --uneven fp8e4m3" 9 3 "$bench/osu_allgatherv" "${small[@]}" \
  -T fp8e4m3 --uneven --data normal
run_check "osu_scatterv --uneven float" 9 3 "$bench/osu_scatterv" "${small[@]}" -T float --uneven
run_check "osu_alltoallv --uneven fp16" 9 3 "$bench/osu_alltoallv" "${small[@]}" -T fp16 \
  --uneven --data constant
run_check "osu_alltoallw --uneven double" 8 3 "$bench/osu_alltoallw" "${small[@]}" -T double --uneven
run_check "osu_barrier" 1 3 "$bench/osu_barrier" -c -i 20 -x 2
grep -qE '^0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +Pass$' "$work/out" ||
  fail "osu_barrier row: $(cat "$work/out")"
run_check "osu_iallreduce fp16" 9 3 "$bench/osu_iallreduce" "${small[@]}" -T fp16 --data normal
grep -q '^# Size *Overall(us) *Compute(us) *Pure Comm.(us) *Overlap(%) *Validation$' "$work/out" ||
  fail "non-blocking column header"
run_check "osu_ibcast double" 8 3 "$bench/osu_ibcast" "${small[@]}" -T double --data real
run_check "osu_iallgather char" 9 3 "$bench/osu_iallgather" "${small[@]}" -T char
run_check "osu_ialltoall bf16" 9 3 "$bench/osu_ialltoall" "${small[@]}" -T bf16 --data constant
run_check "osu_ireduce_scatter float" 9 3 "$bench/osu_ireduce_scatter" "${small[@]}" -T float
grep -q '^# Call: MPI_Ireduce_scatter; .*counts as OSU' "$work/out" || fail "osu_ireduce_scatter call line"
# The block form skips sizes with fewer elements than ranks (4 and 8 bytes of float).
run_check "osu_ireduce_scatter_block float" 7 3 "$bench/osu_ireduce_scatter_block" "${small[@]}" -T float
grep -q '^# Call: MPI_Ireduce_scatter_block;' "$work/out" || fail "osu_ireduce_scatter_block call line"
run_check "osu_ibarrier" 1 3 "$bench/osu_ibarrier" -c -i 20 -x 2
grep -qE '^0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +Pass$' "$work/out" ||
  fail "osu_ibarrier row: $(cat "$work/out")"
run_check "osu_ireduce double" 8 3 "$bench/osu_ireduce" "${small[@]}" -T double --data normal
run_check "osu_igather bf16" 9 3 "$bench/osu_igather" "${small[@]}" -T bf16 --data real
run_check "osu_iscatter char" 9 3 "$bench/osu_iscatter" "${small[@]}" -T char
run_check "osu_iallgatherv --uneven float" 9 3 "$bench/osu_iallgatherv" "${small[@]}" -T float --uneven
run_check "osu_ialltoallv --uneven fp16" 9 3 "$bench/osu_ialltoallv" "${small[@]}" -T fp16 --uneven
run_check "osu_ialltoallw bf16" 9 3 "$bench/osu_ialltoallw" "${small[@]}" -T bf16 --data real
run_check "osu_igatherv double" 8 3 "$bench/osu_igatherv" "${small[@]}" -T double --data uniform
run_check "osu_iscatterv --uneven bf16" 9 3 "$bench/osu_iscatterv" "${small[@]}" -T bf16 --uneven

# --- weight_sync, small tensors on host buffers: plain MPI, MPIZip preloaded, and MPIZip
# compressing host buffers (the 1M tensor compressed, the 512K one raw). Each run exits 0 and
# prints one row: total bytes, median ms, min ms, GB/s, Pass.
ws_row='^1572864 +[0-9.]+ +[0-9.]+ +[0-9.]+ +Pass$'
# run_weight_sync NAME [LAUNCHER ARGS...] [-- PROGRAM ARGS...]
run_weight_sync() {
  local name=$1; shift
  local status=0 mpi_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do mpi_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  "${launcher[@]}" -np 2 "${mpi_args[@]}" "$bench/weight_sync" --tensors 1M,512K -i 3 -x 1 "$@" \
    > "$work/ws" 2>&1 || status=$?
  if [ $status != 0 ]; then
    fail "weight_sync $name: exit status $status"; cat "$work/ws"
  elif [ "$(grep -cE "$ws_row" "$work/ws")" != 1 ] || [ "$(grep -cv '^#' "$work/ws")" != 1 ]; then
    fail "weight_sync $name: not one Pass row"; cat "$work/ws"
  fi
}
run_weight_sync plain
grep -q '^# Tensors: 2 (1M, 512K), 1572864 bytes per sync' "$work/ws" || fail "weight_sync tensors line"
grep -q '^# Datatype: bf16 ' "$work/ws" || fail "weight_sync default type"
grep -q '^# Size *Median time (ms) *Min time (ms) *GB/s (median) *Validation$' "$work/ws" ||
  fail "weight_sync column header"
if [ -f "${MPIZIP_LIB:-}" ]; then
  preload=("$MPIRUN_ENV_OPTION" "LD_PRELOAD=$MPIZIP_LIB")
  compress=("$MPIRUN_ENV_OPTION" MPIZIP_HOST_COMPRESS=1)
  run_weight_sync preloaded "${preload[@]}"
  grep -q '^# MPIZip: active' "$work/ws" || fail "weight_sync preloaded: MPIZip not active"
  run_weight_sync "host compression" "${preload[@]}" "${compress[@]}"
  # Every iteration checked, on trained weights (the test's three values, repeated).
  run_weight_sync "host compression -c real" "${preload[@]}" "${compress[@]}" -- -c --data real
  grep -q '^# Verification: .*every iteration of 4' "$work/ws" || fail "weight_sync -c verification line"
fi

# --- Header lines that results are read by.
"${launcher[@]}" -np 2 "$bench/osu_bw" -T bf16 --data constant -m 2:2 -i 2 -x 0 > "$work/out" 2>&1
grep -q '^# OSU MPI Bandwidth Test' "$work/out" || fail "osu_bw title"
grep -q '^# Data: constant (OSU-style, compresses trivially)' "$work/out" || fail "constant data label"
grep -q '^# Datatype: bf16 (MPI_UINT16_T, 2 bytes)' "$work/out" || fail "datatype line"
grep -q '^# Size      Bandwidth (MB/s)$' "$work/out" || fail "bandwidth column header"

# --- Errors: a clear message and exit status 1.
expect_error() {
  local name=$1 pattern=$2 np=$3; shift 3
  if "${launcher[@]}" -np "$np" "$@" > "$work/out" 2>&1; then
    fail "$name: succeeded"
  elif ! grep -q -- "$pattern" "$work/out"; then
    fail "$name: no '$pattern' in: $(head -3 "$work/out")"
  fi
}
expect_error "unknown type" "-T takes" 2 "$bench/osu_bw" -T int8
expect_error "letters without cuda" "need -d cuda" 2 "$bench/osu_latency" D H
expect_error "--uneven on fixed counts" "unknown option --uneven" 2 "$bench/osu_gather" --uneven
expect_error "three ranks point-to-point" "exactly 2 processes" 3 "$bench/osu_latency"
MPIZIP_REAL_WEIGHTS=$work/missing.bin expect_error "missing weights" "cannot open" 2 "$bench/osu_bw" --data real
if ! grep -q '^#define MPIZIP_HAVE_CUDA 1' "$build/config.h"; then
  expect_error "-d cuda without CUDA" "no CUDA support" 2 "$bench/osu_bw" -d cuda
fi
expect_error "weight_sync odd tensor" "not a whole number of bf16" 2 "$bench/weight_sync" --tensors 1M,3
expect_error "weight_sync bad list" "--tensors takes" 2 "$bench/weight_sync" --tensors 1M,,2K
expect_error "weight_sync -m" "unknown option -m" 2 "$bench/weight_sync" -m 1024
expect_error "weight_sync three ranks" "exactly 2 processes" 3 "$bench/weight_sync" --tensors 1K

# --- compare: a table with a row per size, JSON rows, a plot.
if [ -f "${MPIZIP_LIB:-}" ]; then
  plot=()
  command -v gnuplot > /dev/null && plot=(--plot "$work/c.png")
  if "$src/osu-bench/compare" --reps 2 --json "$work/c.json" "${plot[@]}" -- \
      osu_latency -c -m 1:64 -i 20 -x 2 > "$work/table" 2> "$work/compare.err"; then
    [ "$(grep -cE '^[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$work/table")" = 5 ] || fail "compare table: $(cat "$work/table")"
    grep -q 'speed-up > 1 means MPIZip is better' "$work/table" || fail "compare header"
    [ "$(grep -c '"size":' "$work/c.json")" = 5 ] || fail "compare JSON rows: $(cat "$work/c.json")"
    if command -v python3 > /dev/null; then
      python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["rows"]; assert r[0]["size"] == 4 and r[0]["speedup"] > 0' \
        "$work/c.json" || fail "compare JSON does not parse: $(cat "$work/c.json")"
    fi
    [ ${#plot[@]} = 0 ] || [ -s "$work/c.png" ] || fail "compare plot"
  else
    fail "compare: $(cat "$work/compare.err")"
  fi
  # weight_sync: one row, time per sync, lower is better.
  if "$src/osu-bench/compare" --reps 1 --json "$work/w.json" -- \
      weight_sync --tensors 1M,512K -i 2 -x 1 > "$work/wtable" 2> "$work/w.err"; then
    [ "$(grep -cE '^1572864 +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$work/wtable")" = 1 ] ||
      fail "compare weight_sync table: $(cat "$work/wtable")"
    grep -q '^# Size *plain Time (ms) *MPIZip Time (ms) *speed-up$' "$work/wtable" ||
      fail "compare weight_sync header: $(cat "$work/wtable")"
    grep -q '"higher_is_better": false' "$work/w.json" || fail "compare weight_sync JSON"
  else
    fail "compare weight_sync: $(cat "$work/w.err")"
  fi
  # A baseline of MPIZip with other settings: both sides preloaded, the table says so.
  if "$src/osu-bench/compare" --reps 1 --json "$work/b.json" --baseline "MPIZIP_LOG=error" \
      --env "MPIZIP_LOG=warn" -- osu_latency -m 1:8 -i 20 -x 2 > "$work/btable" 2> "$work/b.err"; then
    grep -q '^# Size *baseline Latency' "$work/btable" || fail "compare --baseline table: $(cat "$work/btable")"
    grep -q '"baseline": "MPIZip MPIZIP_LOG=error"' "$work/b.json" || fail "compare --baseline JSON"
  else
    fail "compare --baseline: $(cat "$work/b.err")"
  fi
else
  fail "MPIZIP_LIB (${MPIZIP_LIB:-unset}) does not exist: cannot test compare"
fi

[ $failures = 0 ] && echo "PASS: osu-bench" || { echo "$failures failures"; exit 1; }
