#!/bin/sh
# The TMA intra-node collectives on 2, 3 and 4 ranks sharing the GPU (tests/gpu/tma_coll.cc): the
# full cases with the end barrier in GPU memory, the small ones with the barrier on the host and on
# the SM load/store path; the log must show that the path was taken. Each run is bounded by
# TMA_TIMEOUT seconds (a hang fails). MPIZIP_TMA_MIN_BYTES=0: the engine takes every size; one run
# more keeps the default 64 KiB, so that the full cases' smaller float and double calls go to the
# MPI library (device buffers staged), checked against the MPI library's own results, beside the
# engine's. Buffers carved out of one large allocation (--slab) must take the engine unstaged at
# every size. Each rank count first runs at MPIZIP_GPU_SHARING=auto, which must keep the engine off
# without MPS (the ranks share one GPU) and on with it. Skipped (77) where there is no GPU.
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/tma_coll"
"$prog" >/dev/null 2>&1; [ $? = 77 ] && exit 77
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for np in ${TMA_TEST_NPS:-2 3 4}; do
  # MPIZIP_GPU_SHARING=auto: the ranks share the one GPU, so the engine runs only where their
  # kernels run side by side (MPS); without MPS the calls go to the MPI library, results checked the
  # same way.
  # (Off, float and double reductions are the MPI library's, checked against its own results on
  # host copies; bf16 and fp16 ones the two-shot's, in the engine's fixed order.)
  if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    want="TMA collectives on for $np ranks"; auto_args="--small"
  else
    want="TMA collectives off on this communicator: ranks share a GPU whose kernels are time-sliced"
    auto_args="--small --mpi-below 1073741824"
  fi
  MPIZIP_TEST_ENV="MPIZIP_LOG=info MPIZIP_TMA_MIN_BYTES=0" timeout "${TMA_TIMEOUT:-300}" sh -c \
    ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog' $auto_args" >"$log" 2>&1 ||
    { grep -v "resource already mapped" "$log" | tail -40; fail "$np ranks, GPU sharing auto"; }
  grep -q "$want" "$log" || { tail -30 "$log"; fail "$np ranks, GPU sharing auto: expected '$want'"; }
  echo "$np ranks, GPU sharing auto: $(grep 'tma_coll:' "$log")"
  # The engine itself, with or without MPS (MPIZIP_GPU_SHARING=concurrent).
  # MPIZIP_TMA_COPY_ENGINE_BYTES=0: every plan of copies alone on the runtime's copies (the
  # statistics must count them).
  for cfg in "MPIZIP_TMA=auto" "MPIZIP_TMA_MIN_BYTES=64K" "MPIZIP_TMA_SYNC=host" "MPIZIP_TMA=sm MPIZIP_TMA_CTAS=3" \
    "MPIZIP_TMA_COPY_ENGINE_BYTES=0 MPIZIP_STATS=1"; do
    args="--small"
    [ "$cfg" = "MPIZIP_TMA_MIN_BYTES=64K" ] && args="--mpi-below 65536"
    if [ "$cfg" = "MPIZIP_TMA=auto" ]; then
      args=${TMA_TEST_ARGS:-}
      case " ${TMA_TEST_BIG_NP:-} " in *" $np "*) args="$args --big" ;; esac
    fi
    min="MPIZIP_TMA_MIN_BYTES=0"
    case $cfg in *MIN_BYTES*) min="" ;; esac
    MPIZIP_TEST_ENV="MPIZIP_LOG=info MPIZIP_GPU_SHARING=concurrent $min $cfg" timeout "${TMA_TIMEOUT:-300}" sh -c \
      ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog' $args" >"$log" 2>&1 ||
      { tail -30 "$log"; fail "$np ranks, $cfg $args"; }
    grep -q "TMA collectives on for $np ranks" "$log" || { tail -30 "$log"; fail "$np ranks, $cfg: path not taken"; }
    case $cfg in *COPY_ENGINE*)
      grep -q "runtime copies=[1-9]" "$log" || { grep stats "$log" | head -4; fail "$np ranks, $cfg: no copies by the runtime counted"; }
      # Buffers of their own allocations under 1 MiB are staged (the runtime carves them out of
      # shared blocks, which CUDA IPC cannot map twice).
      grep -q "runtime copies=[0-9]* staged=[1-9]" "$log" || { grep stats "$log" | head -4; fail "$np ranks, $cfg: small allocations not staged"; } ;;
    esac
    echo "$np ranks, $cfg $args: $(grep 'tma_coll:' "$log")"
  done
  # Small calls in one large allocation: the engine shares them as they are, nothing staged.
  MPIZIP_TEST_ENV="MPIZIP_LOG=info MPIZIP_GPU_SHARING=concurrent MPIZIP_TMA_MIN_BYTES=0 MPIZIP_STATS=1" timeout "${TMA_TIMEOUT:-300}" sh -c \
    ". '$MPIZIP_SRCDIR/tests/mpi/lib.sh'; run_mpi mpizip $np '$prog' --slab" >"$log" 2>&1 ||
    { tail -30 "$log"; fail "$np ranks, --slab"; }
  n=$(grep -c "intra-node engine collectives=[1-9][0-9]* runtime copies=[0-9]* staged=0" "$log")
  [ "$n" = "$np" ] || { grep stats "$log" | head -4; fail "$np ranks, --slab: $n of $np ranks ran every call on the engine unstaged"; }
  echo "$np ranks, --slab: $(grep 'tma_coll:' "$log"), nothing staged"
done
