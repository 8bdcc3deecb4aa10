#!/bin/bash
# netns_bench.sh: osu_bw between two "nodes" on one machine, plain MPI against MPIZip with host
# compression (the CPU codec), over a rate-limited link. The nodes are the network namespaces of
# tests/netns/setup.sh (a veth pair shaped with tc tbf); osu-bench/compare runs each data kind
# plain and with MPIZip preloaded, alternating, and one more MPIZip run per size with
# MPIZIP_STATS=1 reads the compression ratio on the wire (compressed bytes / original bytes; 1.000
# where the message went uncompressed) and checks that the payload crossed the veth pair.
#
# usage: netns_bench.sh [--reps N] [--rate RATE] [--burst BYTES] [--pml ob1|ucx]
#                       [--data "real uniform normal"] OUTDIR [-- OSU_BW_ARGUMENTS...]
#   --reps N        plain/MPIZip run pairs per data kind (default 3); medians per size
#   --rate RATE     the link's rate, a tc rate (default 1gbit; "none": unlimited)
#   --burst BYTES   the token bucket's size (default 256kb)
#   --pml P         Open MPI's transport between the nodes: ob1 (TCP, default) or ucx (UCX on TCP)
#   --data LIST     data kinds, as osu_bw's --data (default "real uniform normal")
#   OSU_BW_ARGUMENTS  default: -m 65536:67108864 -i 4 -x 1 -W 8 (always with -T bf16 --data KIND)
#
# Writes OUTDIR/osu_bw_bf16_KIND.json (compare's JSON) and OUTDIR/netns-RATE-cpu.json (every row:
# plain and MPIZip MB/s, speed-up, compression ratio; the date, load, commit and settings), and
# prints the table (also kept as OUTDIR/netns-RATE-cpu.txt). Run from a build tree (or set MPIZIP_BUILDDIR); needs root and Open MPI.
# Environment: MPIZIP_REAL_WEIGHTS (default: fetched by data/fetch-real-weights.sh), MPIZIP_LIB,
# and any MPIZIP_* setting, which reaches every rank (e.g. MPIZIP_MIN_BYTES=64K).
set -euo pipefail

prog=netns_bench.sh
die() { echo "$prog: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../tests/netns

reps=3 rate=1gbit burst=256kb pml=ob1 kinds="real uniform normal" out=
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --pml) pml=$2; shift 2 ;;
    --data) kinds=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) [ -z "$out" ] || die "one output directory, please"; out=$1; shift ;;
  esac
done
[ -n "$out" ] || die "usage: $prog [options] OUTDIR [-- OSU_BW_ARGUMENTS...]"
osu_args=("$@")
[ ${#osu_args[@]} -gt 0 ] || osu_args=(-m 65536:67108864 -i 4 -x 1 -W 8)
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"

builddir=$(cd "${MPIZIP_BUILDDIR:-.}" && pwd)
bench=$builddir/osu-bench/osu_bw
lib=${MPIZIP_LIB:-$builddir/.libs/libmpizip.so}
[ -x "$bench" ] || die "no $bench: run from a build tree, or set MPIZIP_BUILDDIR"
[ -f "$lib" ] || die "no $lib: build the library, or set MPIZIP_LIB"
if [ -z "${MPIZIP_REAL_WEIGHTS:-}" ]; then
  MPIZIP_REAL_WEIGHTS=$(MPIZIP_BUILDDIR=$builddir "$here/data/fetch-real-weights.sh")
fi
export MPIZIP_REAL_WEIGHTS MPIZIP_BUILDDIR=$builddir MPIZIP_LIB=$lib
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# MPIZip's runs compress host buffers; plain runs do not load the library, so it changes nothing
# there. The launcher passes every MPIZIP_* variable to the ranks of both nodes.
export MPIZIP_HOST_COMPRESS=1
mkdir -p "$out"
out=$(cd "$out" && pwd)

# One job at a time on this machine uses the namespaces (tests/netns/netns.sh takes this lock too).
exec 9> /run/lock/mpizip-netns.lock
flock -w 600 9 || die "the namespaces stayed busy for 10 minutes (another test or benchmark)"
work=$(mktemp -d)
trap 'rm -rf "$work"; "$netns/setup.sh" teardown' EXIT
trap 'exit 1' HUP INT TERM
"$netns/setup.sh" "$rate" "$burst"
launcher=("$netns/mpirun.sh" --pml "$pml")
# Bytes that arrived at mpz-b's end of the link.
arrived_at_b() { ip netns exec mpz-b cat /sys/class/net/mpz-b0/statistics/rx_bytes; }
# The MPIZip settings of the runs (paths to files left out).
paths='^MPIZIP_\(BUILDDIR\|SRCDIR\|LIB\|REAL_WEIGHTS\|DATA_DIR\)='
settings=$(env | grep '^MPIZIP_' | grep -v "$paths" | sort | tr '\n' ' ' | sed 's/ $//')
# Rank 0's statistics line of bf16 messages sent, as "wire-bytes ratio".
sent_bf16='s/^\[mpizip 0\] stats: .* sent bf16 messages=[0-9]* compressed=[0-9]* bytes=[0-9]*'
sent_bf16+=' wire=\([0-9]*\) ratio=\([0-9.]*\).*/\1 \2/p'

# The source tree's commit when the run starts (the build tree should be built from it).
commit=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
modified=false
git -C "$here/.." diff --quiet HEAD 2>/dev/null || modified=true
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(loadavg)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for kind in $kinds; do
  echo "== osu_bw -T bf16 --data $kind ${osu_args[*]}: plain vs MPIZip, link $rate, pml $pml" >&2
  MPIRUN="${launcher[*]}" "$here/compare" --reps "$reps" --json "$out/osu_bw_bf16_$kind.json" -- \
    "$bench" -T bf16 --data "$kind" "${osu_args[@]}" | tee "$work/$kind.txt" >&2
  # Compression ratio per size: one message of that size, MPIZip's statistics of rank 0. Its
  # payload must have crossed the link: UCX takes both namespaces for one machine, and shared
  # memory between them would bypass the link.
  awk '!/^#/ && NF == 4 { print $1 }' "$work/$kind.txt" | while read -r size; do
    before=$(arrived_at_b)
    MPIZIP_STATS=1 "${launcher[@]}" -np 2 -x "LD_PRELOAD=$lib" "$bench" -T bf16 --data "$kind" \
      -m "$size:$size" -i 1 -x 0 -W 1 < /dev/null > "$work/stats" 2>&1 ||
      { cat "$work/stats" >&2; die "the statistics run of $kind, $size bytes failed"; }
    arrived=$(($(arrived_at_b) - before))
    stats=$(sed -n "$sent_bf16" "$work/stats" | head -n 1)
    [ -n "$stats" ] ||
      { cat "$work/stats" >&2; die "no bf16 statistics from rank 0 ($kind, $size bytes)"; }
    read -r wire ratio <<< "$stats"
    [ "$arrived" -ge "$wire" ] ||
      die "rank 0 sent $wire payload bytes ($kind, $size bytes), $arrived arrived over the link"
    awk -v kind="$kind" -v size="$size" -v ratio="$ratio" \
      '!/^#/ && NF == 4 && $1 == size { print kind, $1, $2, $3, $4, ratio }' "$work/$kind.txt"
  done >> "$work/rows"
done
load_after=$(loadavg)

print_table() {
  echo "# osu_bw -T bf16 ${osu_args[*]}, 2 ranks on two namespace nodes, link $rate" \
       "(tbf burst $burst), pml $pml; medians of $reps alternating runs"
  echo "# MPIZip runs: $settings (CPU codec); ratio = compressed / original bytes on the wire"
  echo "# $date, $(nproc) CPUs, load average before $load_before, after $load_after;" \
       "commit $commit$([ $modified = false ] || echo ' (tree modified)')"
  printf '%-8s %10s %12s %12s %9s %7s\n' "# data" size "plain MB/s" "MPIZip MB/s" speed-up ratio
  awk '{ printf "%-8s %10s %12.2f %12.2f %9.3f %7.3f\n", $1, $2, $3, $4, $5, $6 }' "$work/rows"
}

json_string() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
write_json() {
  local args sep='' a
  args=$(for a in -T bf16 --data KIND "${osu_args[@]}"; do
           printf '%s%s' "$sep" "$(json_string "$a")"
           sep=", "
         done)
  printf '{\n  "benchmark": "osu_bw",\n  "args": [%s],\n' "$args"
  printf '  "date": %s,\n  "cpus": %s,\n' "$(json_string "$date")" "$(nproc)"
  printf '  "load_before": %s,\n  "load_after": %s,\n' "$(json_string "$load_before")" \
    "$(json_string "$load_after")"
  printf '  "commit": %s,\n  "tree_modified": %s,\n' "$(json_string "$commit")" "$modified"
  printf '  "link": {"rate": %s, "burst": %s, "pml": %s},\n' "$(json_string "$rate")" \
    "$(json_string "$burst")" "$(json_string "$pml")"
  printf '  "np": 2,\n  "reps": %s,\n' "$reps"
  printf '  "mpizip_settings": %s,\n' "$(json_string "$settings")"
  printf '  "rows": ['
  awk '{ printf "%s\n    {\"data\": \"%s\", \"size\": %s, \"plain\": %s, \"mpizip\": %s, " \
                "\"speedup\": %s, \"ratio\": %s}", (NR > 1 ? "," : ""), $1, $2, $3, $4, $5, $6 }' \
    "$work/rows"
  printf '\n  ]\n}\n'
}

write_json > "$out/netns-$rate-cpu.json"
print_table | tee "$out/netns-$rate-cpu.txt"
