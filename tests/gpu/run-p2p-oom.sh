#!/bin/sh
# Device-buffer point-to-point when memory runs out (tests/gpu/p2p_oom.cc) on 2 ranks sharing the
# GPU, each its own node (MPIZIP_FORCE_INTERNODE=1: device buffers are compressed), over the MPI
# library and over the emulated link: the receiver or the sender out of device memory, the codec's
# workspace unable to grow, pools of 1 MiB. Every message must arrive bit-exact with MPI_SUCCESS
# (the program checks), no run may hang (timeout), and in each rank's stderr the fallback's notice
# must appear exactly once, however many messages took the fallback, with no error line and no line
# repeated. Called by tests/gpu/run-p2p.sh; skipped (77) where there is no GPU.
#
#   MPIZIP_BUILDDIR=... MPIZIP_SRCDIR=... MPIZIP_LIB=... sh tests/gpu/run-p2p-oom.sh
#
# MPIZIP_OOM_LOGS keeps the runs' stderr in that folder (default: a temporary one, removed);
# MPIZIP_OOM_TIMEOUT is the limit of one run in seconds (default 300); MPIZIP_OOM_LINKS the
# transports to run over (default "pmpi emulated").
. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"
prog="$MPIZIP_BUILDDIR/tests/gpu/p2p_oom"
[ -x "$prog" ] || fail "$prog is not built (make tests/gpu/p2p_oom)"
"$prog" --gpu-present >/dev/null 2>&1 || exit 77
limit=${MPIZIP_OOM_TIMEOUT:-300}
if [ -n "${MPIZIP_OOM_LOGS:-}" ]; then
  logs=$MPIZIP_OOM_LOGS
  mkdir -p "$logs"
else
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
fi
failures=0

bad() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME "SETTINGS" CASE [BYTES]: one mpirun of p2p_oom, its stderr in $logs/NAME.log.
run() {
  name=$1 settings=$2
  shift 2
  log="$logs/$name.log"
  echo "== $name: $settings; p2p_oom $*"
  MPIZIP_TEST_ENV="MPIZIP_LOG=warn MPIZIP_FORCE_INTERNODE=1 $settings" \
    timeout -k 20 "$limit" sh -c '. "$MPIZIP_SRCDIR/tests/mpi/lib.sh"; run_mpi mpizip "$@"' \
    run 2 "$prog" "$@" 2>"$log"
  rc=$?
  grep '^\[mpizip ' "$log" | sed 's/^/   /'
  case $rc in
    0) return 0 ;;
    124 | 137) bad "$name: no result after $limit s (hang?); log: $log" ;;
    *) bad "$name: exit $rc; log: $log"; grep -v '^\[mpizip ' "$log" | tail -20 >&2 ;;
  esac
  return 1
}

# notices NAME PATTERN MIN: on ranks 0 and 1, the warn line starting with PATTERN appears at least
# MIN and at most once; no error line; no line twice; at most three warn lines per rank (a
# fallback is one notice, not one per message: each case takes its fallback in 8 messages).
notices() {
  name=$1 pattern=$2 min=$3
  log="$logs/$name.log"
  for r in 0 1; do
    n=$(grep -c "^\[mpizip $r\] warn: $pattern" "$log")
    [ "$n" -ge "$min" ] || bad "$name: rank $r never said \"$pattern...\" (the fallback did not happen?)"
    [ "$n" -le 1 ] || bad "$name: rank $r said \"$pattern...\" $n times, not once"
    w=$(grep -c "^\[mpizip $r\] warn:" "$log")
    [ "$w" -le 3 ] || bad "$name: rank $r wrote $w warn lines (one notice per fallback expected)"
  done
  e=$(grep -c '^\[mpizip [0-9?]*\] error:' "$log")
  [ "$e" -eq 0 ] || bad "$name: $e error lines (a fallback is not an error), e.g. $(grep -m1 '^\[mpizip [0-9?]*\] error:' "$log")"
  d=$(grep '^\[mpizip ' "$log" | sort | uniq -d | head -3)
  [ -z "$d" ] || bad "$name: lines repeated: $d"
}

recv_notice="no device memory for a "
send_notice="GPU compression unavailable"
staging_notice="pinned staging memory exhausted"
for link in ${MPIZIP_OOM_LINKS:-pmpi emulated}; do
  settings="MPIZIP_TRANSPORT=$link"
  [ "$link" = emulated ] && settings="$settings MPIZIP_EMU_GBPS=47"
  # (a) the receiver has no device memory for the compressed stream: it receives into host memory
  # and decodes on the CPU.
  run "recv-oom-$link" "$settings" recv-oom && notices "recv-oom-$link" "$recv_notice" 1
  # (b) the sender cannot get device memory for the stream: it sends the raw bytes.
  run "send-oom-$link" "$settings" send-oom && notices "send-oom-$link" "$send_notice" 1
  # (b) the sender's stream comes from the pool, but the codec's workspace cannot grow. Whether the
  # workspace allocation fails depends on the runtime's small-allocation granularity: the notice
  # may be absent, never repeated.
  run "send-oom-workspace-$link" "$settings" send-oom-workspace &&
    notices "send-oom-workspace-$link" "$send_notice" 0
  # (c) pools of 1 MiB (device blocks and pinned host blocks taken per message, staging through
  # pageable memory), 64 MiB messages. The MPI library transport stages device buffers, and says
  # once that its pinned pool is exhausted; the emulated link moves them through CUDA IPC.
  min=0
  [ "$link" = pmpi ] && min=1
  run "tiny-pools-$link" "$settings MPIZIP_DEVICE_POOL_BYTES=1M MPIZIP_STAGING_BYTES=1M" tiny-pools &&
    notices "tiny-pools-$link" "$staging_notice" "$min"
done
if [ "$failures" -ne 0 ]; then
  trap - EXIT  # keep the logs
  fail "$failures checks failed (logs: $logs)"
fi
echo "p2p_oom: all cases passed"
