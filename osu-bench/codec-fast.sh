#!/bin/bash
# The codec's fast mode on a GPU machine, in one call: its tests (codec_gpu_test's fast cases), the
# codec benchmark with both coders side by side (--mode=ans,fast), the anchor codec's benchmark on
# the same data, memcheck on a reduced run of the fast tests, and the device-to-device copy as the
# memory ceiling. Programs are built elsewhere (nvcc 13.0, sm_90) and brought along in BIN:
# codec_gpu_test, codec, anchor_bench, copy_bw. Every step's output goes to OUT; the last lines
# printed are a short table (bf16 uniform).
#
#   osu-bench/codec-fast.sh BIN OUT [STEPS]     STEPS default: "tests bench anchor memcheck copy rest"
#
# Steps run in that order (the most needed first) whatever the order in STEPS, each bounded by
# T_<STEP> seconds (defaults below), so that a hung kernel cannot take the whole call.
# DATA (default uniform,normal) and TYPES pick the benchmark's data and types.
# rest: the other codec_gpu_test cases (the ANS coder), where the call has time left; ncu: Nsight
# Compute's speed-of-light and memory sections of the fast encoder and decoder, bf16 uniform 1 GiB.
set -u
bin=${1:?BIN}
out=${2:?OUT}
steps=${3:-tests bench anchor memcheck copy rest}
mkdir -p "$out"
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# timeout SECONDS: exit 124 when a step ran out of its time.
bounded() { local t=$1; shift; timeout --signal=KILL "$t" "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
sizes=${SIZES:-1,16,64,1024}

if has tests && [ -x "$bin/codec_gpu_test" ]; then
  bounded "${T_TESTS:-120}" "$bin/codec_gpu_test" --gtest_filter='CodecGpuFast*' > "$out/fast_test.log" 2>&1
  rc=$?
  stamp "codec_gpu_test fast: exit $rc ($(grep -E '^\[  (PASSED|FAILED)' "$out/fast_test.log" | tr '\n' ' '))"
  # A fast kernel that never finished: time only the ANS coder, and skip memcheck of the fast cases.
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then MODES=ans; steps=${steps/memcheck/}; echo "fast tests timed out: bench of mode ans only"; fi
  grep -E 'fast ratio|Failure|FAILED|Expected|Which is|actual|differ' "$out/fast_test.log" | head -24
fi
if has bench && [ -x "$bin/codec" ]; then
  # 1 MiB to 1 GiB by 4x (1, 4, 16, 64, 256, 1024 MiB), both coders on the same buffers.
  bounded "${T_BENCH:-150}" "$bin/codec" --types="${TYPES:-bf16,fp32,e5m2}" --data="${DATA:-uniform,normal}" --min=1M --max=1G \
    --mode="${MODES:-ans,fast}" --commit="${COMMIT:-unknown}" --json="$out/mpizip.json" > "$out/mpizip.txt" 2>&1
  stamp "codec: exit $?"
fi
if has anchor && [ -x "$bin/anchor_bench" ]; then
  bounded "${T_ANCHOR:-60}" "$bin/anchor_bench" --types "${TYPES:-bf16,fp32,e5m2}" --dists uniform,normal --sizes "$sizes" \
    --json "$out/anchor.json" > "$out/anchor.txt" 2>&1
  stamp "anchor_bench: exit $?"
fi
if has memcheck && command -v compute-sanitizer > /dev/null && [ -x "$bin/codec_gpu_test" ]; then
  MPIZIP_GPU_TEST_QUICK=1 bounded "${T_MEMCHECK:-90}" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$bin/codec_gpu_test" --gtest_brief=1 \
    --gtest_filter="${MEMCHECK_FILTER:-CodecGpuFast.SizesOffsetsAndCtas:CodecGpuFast.FlippedAndTruncatedStreams:CodecGpuFast.ErrorsAndCoderMismatch:CodecGpuFast.AllFp8BytePairs}" \
    > "$out/memcheck.log" 2>&1
  stamp "memcheck: exit $? ($(grep -E '^\[  (PASSED|FAILED)|ERROR SUMMARY' "$out/memcheck.log" | tr '\n' ' '))"
fi
if has copy && [ -x "$bin/copy_bw" ]; then
  # The memory ceiling: cudaMemcpy device to device, MB/s of bytes copied (read + write is twice that).
  bounded 30 "$bin/copy_bw" -m 1073741824:1073741824 -i 20 -x 3 > "$out/copy_bw.txt" 2>&1
  stamp "copy_bw: exit $? ($(grep -v '^#' "$out/copy_bw.txt" | tail -1))"
fi
if has rest && [ -x "$bin/codec_gpu_test" ]; then
  MPIZIP_GPU_TEST_QUICK=1 bounded "${T_REST:-120}" "$bin/codec_gpu_test" --gtest_brief=1 --gtest_filter='-CodecGpuFast*' \
    > "$out/rest_test.log" 2>&1
  stamp "codec_gpu_test others (quick): exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$out/rest_test.log" | tr '\n' ' '))"
fi
if has ncu && command -v ncu > /dev/null && [ -x "$bin/codec" ]; then
  for k in encode decode; do
    bounded "${T_NCU:-60}" ncu --clock-control none --kernel-name-base mangled -k "regex:4fast.*${k}_kernel" -c 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section WarpStateStats "$bin/codec" --types=bf16 --data=uniform --min=1G --max=1G --mode=fast > "$out/ncu-$k.txt" 2>&1
    stamp "ncu $k: exit $?"
    grep -E 'Memory Throughput|DRAM Throughput|Duration|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occ' "$out/ncu-$k.txt" | head -10
  done
fi
echo "--- bf16 uniform (us; MPIZip ans, fast; anchor)"
grep -E '^bf16 +uniform' "$out/mpizip.txt" 2>/dev/null | awk '{print $2, $3, $4, "ratio", $6, "c", $10, "d", $15, $NF}'
grep -E '^bf16 +uniform' "$out/anchor.txt" 2>/dev/null
grep -E 'MISMATCH' "$out/mpizip.txt" 2>/dev/null | head -5
exit 0
