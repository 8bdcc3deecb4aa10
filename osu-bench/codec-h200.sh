#!/bin/bash
# The GPU codec on a GPU machine, in one call: its tests, the codec benchmark and the anchor codec's
# benchmark side by side (same data, same call), variant builds of the codec benchmark, the
# encoder's phase cycles (a -DMPIZIP_ENC_PROF=1 build) and Nsight Compute profiles. Programs are
# built elsewhere (nvcc 13.0, sm_90) and brought along; each step runs only when its program is
# there, and every step's output goes to OUT.
#
#   osu-bench/codec-h200.sh BIN OUT [STEPS]
#
# BIN holds codec_gpu_test, decode_fold_test, codec (the build under test), anchor_bench, and
# optionally codec.<variant> (other builds, timed on bf16/fp32/e5m2 uniform) and codec.prof.
# FULL="X Y" also runs codec.X and codec.Y over every type and data kind (mpizip-X.json).
# STEPS (default "tests bench variants sweep prof ncu"; also memcheck) picks the steps. Real weights: MPIZIP_REAL_WEIGHTS.
# The last lines printed are a short table (bf16 uniform, both codecs).
set -u
bin=${1:?BIN}
out=${2:?OUT}
steps=${3:-tests bench variants sweep prof ncu}
mkdir -p "$out"
has() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
real=${MPIZIP_REAL_WEIGHTS:-}
data=uniform,normal
[ -n "$real" ] && [ -s "$real" ] && data=uniform,normal,real
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$out/gpu.txt" 2>&1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

if has tests && [ -x "$bin/codec_gpu_test" ]; then
  "$bin/codec_gpu_test" --gtest_brief=1 > "$out/codec_gpu_test.log" 2>&1
  stamp "codec_gpu_test: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$out/codec_gpu_test.log" | tr '\n' ' '))"
  "$bin/decode_fold_test" --gtest_brief=1 > "$out/decode_fold_test.log" 2>&1
  stamp "decode_fold_test: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$out/decode_fold_test.log" | tr '\n' ' '))"
  for v in "$bin"/codec_gpu_test.* "$bin"/decode_fold_test.*; do
    [ -x "$v" ] || continue
    log="$out/${v##*/}.log"
    "$v" --gtest_brief=1 > "$log" 2>&1
    stamp "${v##*/}: exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$log" | tr '\n' ' '))"
  done
fi

if has memcheck && command -v compute-sanitizer > /dev/null && [ -x "$bin/codec_gpu_test" ]; then
  MPIZIP_GPU_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/codec_gpu_test" --gtest_brief=1 \
    --gtest_filter='*Corrupt*:*Unaligned*:*Boundaries*' > "$out/memcheck.log" 2>&1
  stamp "memcheck: exit $? ($(tail -1 "$out/memcheck.log"))"
  # An input of several waves of 16384-symbol blocks (look-back across waves), under the checker too.
  if [ -x "$bin/codec" ]; then
    compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/codec" --types=bf16,e5m2 --data=uniform --min=64M \
      --max=64M > "$out/memcheck-codec.log" 2>&1
    stamp "memcheck codec 64 MiB: exit $? ($(tail -1 "$out/memcheck-codec.log"))"
  fi
fi

if has bench && [ -x "$bin/codec" ]; then
  "$bin/codec" --types=bf16,fp16,fp32,fp64,e4m3,e5m2 --data=$data --min=1M --max=1G \
    --json="$out/mpizip.json" > "$out/mpizip.txt" 2>&1
  stamp "codec: exit $?"
  for v in "$bin"/codec.*; do
    case $v in *.[A-Z]) ;; *) continue ;; esac
    [ -x "$v" ] || continue
    case " ${FULL:-} " in *" ${v##*.} "*) ;; *) continue ;; esac
    "$v" --types=bf16,fp16,fp32,fp64,e4m3,e5m2 --data=$data --min=1M --max=1G \
      --json="$out/mpizip-${v##*.}.json" > "$out/mpizip-${v##*.}.txt" 2>&1
    stamp "codec.${v##*.} (every type): exit $?"
  done
  if [ -x "$bin/anchor_bench" ]; then
    "$bin/anchor_bench" --types bf16,fp16,fp32,e4m3,e5m2 --dists ${data} --sizes 1,4,16,64,256,1024 \
      ${real:+--real "$real"} --json "$out/anchor.json" > "$out/anchor.txt" 2>&1
    stamp "anchor_bench: exit $?"
  fi
fi

if has variants; then
  for v in "$bin"/codec.*; do
    [ -x "$v" ] || continue
    case $v in *.prof | *.xz) continue ;; esac
    case " ${FULL:-} " in *" ${v##*.} "*) continue ;; esac
    name=${v##*/codec.}
    "$v" --types=bf16,fp32,e5m2 --data=uniform --min=1M --max=1G > "$out/variant-$name.txt" 2>&1
    stamp "variant $name: exit $?"
  done
  if [ -x "$bin/anchor_bench" ] && ! has bench; then
    "$bin/anchor_bench" --types bf16,fp32,e5m2 --dists uniform --sizes 1,4,16,64,256,1024 > "$out/anchor.txt" 2>&1
    stamp "anchor_bench: exit $?"
  fi
fi

if has sweep && [ -x "$bin/codec" ]; then
  # Block sizes the size rule does not pick (bf16 uniform, compress / decompress us and ratio).
  for lb in 13 14; do
    "$bin/codec" --types=bf16 --data=uniform --min=1M --max=64M --log2-block=$lb > "$out/sweep-lb$lb.txt" 2>&1
    stamp "sweep lb $lb: exit $?"
  done
fi

if has prof && [ -x "$bin/codec.prof" ]; then
  # Cycles per phase per block (lane 0's clock, averaged over a launch's blocks), per launch.
  { "$bin/codec.prof" --types=bf16 --data=uniform --min=1M --max=1G
    "$bin/codec.prof" --types=bf16 --data=uniform --min=1M --max=1M --log2-block=14
    "$bin/codec.prof" --types=e5m2 --data=uniform --min=64M --max=1G; } > "$out/prof.txt" 2>&1
  stamp "prof: exit $?"
fi

if has ncu && command -v ncu > /dev/null && [ -x "$bin/codec" ]; then
  sec="--section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis"
  for k in encode decode; do
    timeout 120 ncu --clock-control none $sec -k regex:${k}_kernel --launch-skip 3 --launch-count 1 \
      -o "$out/ncu-$k" "$bin/codec" --types=bf16 --data=uniform --min=256M --max=256M > "$out/ncu-$k.log" 2>&1
    ncu -i "$out/ncu-$k.ncu-rep" --page details > "$out/ncu-$k-details.txt" 2>&1
    ncu -i "$out/ncu-$k.ncu-rep" --page source --csv --print-source sass > "$out/ncu-$k-sass.csv" 2>&1
    stamp "ncu $k: $(grep -m1 -E 'Duration' "$out/ncu-$k-details.txt")"
  done
fi

for f in "$out"/mpizip*.txt; do
  [ -f "$f" ] || continue
  echo "== ${f##*/} =="
  grep -E '^bf16 +uniform' "$f"
done
for f in "$out"/variant-*.txt; do
  [ -f "$f" ] || continue
  echo "== ${f##*/} =="
  grep -E '^(bf16|e5m2) +uniform' "$f"
done
for f in "$out"/sweep-*.txt; do
  [ -f "$f" ] || continue
  echo "== ${f##*/} =="
  grep -E '^bf16 +uniform' "$f"
done
echo "== anchor =="
grep -E '^bf16 +uniform|^e5m2 +uniform' "$out/anchor.txt" 2>/dev/null
grep -E 'encprof' "$out/prof.txt" 2>/dev/null | awk '{k=$2" "$3" "$4" "$5; n[k]++; for(i=10;i<=NF;i+=2){s[k,i]+=$i; nm[i]=$(i-1)}} END{for(k in n){printf "%s:", k; for(i=10;i<=20;i+=2) printf " %s %.0f", nm[i], s[k,i]/n[k]; print ""}}'
