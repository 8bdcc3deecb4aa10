#!/bin/bash
# when-to-compress.sh: the grid of "compress only when it pays" (docs/DESIGN.md, "When a
# point-to-point message is compressed"): for each link speed of the emulated link, data kind and
# operation, MPIZip's default (MPIZIP_COMPRESS=auto, the cost model) against each forced way
# (always, never), per message size. Two side-by-side runs of osu-bench/compare per cell, both
# against never as the baseline, alternating within each run: auto over never and always over
# never; the default over the better way is then auto / max(1, always), both as speed-ups over never.
#
# usage: when-to-compress.sh [options] OUT.json
#   --op p2p|allreduce     osu_bw (2 ranks) or osu_allreduce (--np ranks) (default p2p)
#   --links "GB/s ..."     emulated link speeds (default "12.5 25 47 100 200 400")
#   --data "KIND ..."      osu-bench data kinds (default "uniform real bits")
#   --type T               element type (default bf16)
#   --sizes MIN:MAX        message sizes, powers of two (default 262144:1073741824)
#   --device cuda|host     where the buffers are (default cuda; host turns MPIZIP_HOST_COMPRESS on)
#   --np N --reps N        ranks (allreduce) and run pairs per compare (default 4 and 3)
#   -i N -x N              iterations and warm-up per size, passed to the benchmark (default 5, 1)
#   -W N                   osu_bw's window, messages in flight (default its own, 64)
#   --keep DIR             keep each compare run's JSON in DIR, and skip the runs already there (a
#                          grid measured over several calls; the merge takes every complete cell)
# Writes OUT.json (a row per cell: operation, data, type, link_gbps, bytes, the three ways'
# figures, default_over_best) and the heat maps beside it (osu-bench/plot --heatmap). Run it under
# osu-bench/with-mps on a GPU machine where ranks share a GPU.
set -euo pipefail
prog=when-to-compress.sh
all_args="$*"
die() { echo "$prog: $*" >&2; exit 1; }
op=p2p links="12.5 25 47 100 200 400" datas="uniform real bits" type=bf16
sizes=262144:1073741824 device=cuda np=4 reps=3 iters=5 warm=1 window= keep=
while [ $# -gt 1 ]; do
  case $1 in
    --op) op=$2 ;; --links) links=$2 ;; --data) datas=$2 ;; --type) type=$2 ;;
    --sizes) sizes=$2 ;; --device) device=$2 ;; --np) np=$2 ;; --reps) reps=$2 ;;
    -i) iters=$2 ;; -x) warm=$2 ;; -W) window=$2 ;; --keep) keep=$2 ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[ $# = 1 ] || die "usage: $prog [options] OUT.json"
out=$1
here=$(cd "$(dirname "$0")" && pwd)
case $op in
  p2p) bench=osu_bw; ranks=2 ;;
  allreduce) bench=osu_allreduce; ranks=$np ;;
  *) die "--op takes p2p or allreduce" ;;
esac
extra=
[ "$device" = host ] && extra="MPIZIP_HOST_COMPRESS=1"
if [ -n "$keep" ]; then
  mkdir -p "$keep" && work=$keep
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
cells=()
for data in $datas; do
  for link in $links; do
    env="MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=$link MPIZIP_FORCE_INTERNODE=1 $extra"
    args=(-d "$device" -T "$type" --data "$data" -m "$sizes" -i "$iters" -x "$warm")
    [ -n "$window" ] && [ "$op" = p2p ] && args+=(-W "$window")
    for way in auto always; do
      [ -n "$keep" ] && [ -s "$work/$data-$link-$way.json" ] && continue
      setting=; [ $way = always ] && setting="MPIZIP_COMPRESS=always"
      echo "== $op $data ${link} GB/s: $way over never" >&2
      "$here/compare" --np "$ranks" --reps "$reps" --json "$work/$data-$link-$way.json" \
        --baseline "$env MPIZIP_COMPRESS=never" --env "$env $setting" -- "$bench" "${args[@]}" >&2
    done
    cells+=("$data $link")
  done
done
python3 - "$work" "$out" "$op" "$type" "$device" "$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  "$all_args" "${cells[@]}" <<'PY'
import json, sys, subprocess
work, out, op, typ, device, commit, argv = sys.argv[1:8]
rows = []
import os
for cell in sys.argv[8:]:
    data, link = cell.split()
    if not all(os.path.exists(f"{work}/{data}-{link}-{w}.json") for w in ("auto", "always")):
        print(f"cell {data} {link} GB/s: not measured", file=sys.stderr)
        continue
    auto = json.load(open(f"{work}/{data}-{link}-auto.json"))
    always = json.load(open(f"{work}/{data}-{link}-always.json"))
    higher = auto["higher_is_better"]
    by_size = {r["size"]: r for r in always["rows"]}
    for r in auto["rows"]:
        a = by_size.get(r["size"])
        if a is None:
            continue
        # Speed-ups over never (both runs' own never), higher is better.
        s_auto, s_always = r["speedup"], a["speedup"]
        rows.append({
            "operation": op, "data": data, "type": typ, "link_gbps": float(link), "bytes": r["size"],
            "metric": auto["metric"], "higher_is_better": higher,
            "never": r["plain"], "default": r["mpizip"], "always": a["mpizip"], "never_in_always_run": a["plain"],
            "default_over_never": s_auto, "always_over_never": s_always,
            "default_over_best": round(s_auto / max(1.0, s_always), 4),
        })
doc = {
    "about": "MPIZip's default (MPIZIP_COMPRESS=auto) against the better of the forced ways, per cell of "
             "link speed x size x data x operation; two osu-bench/compare runs per cell, each "
             "alternating with MPIZIP_COMPRESS=never: default_over_best = (auto/never) / max(1, always/never), "
             "medians per size. 1 = as good as the better way; the target is >= 0.97.",
    "command": f"osu-bench/when-to-compress.sh {argv}", "commit": commit, "device": device, "rows": rows,
}
json.dump(doc, open(out, "w"), indent=1)
worst = min(rows, key=lambda r: r["default_over_best"]) if rows else None
print(f"{len(rows)} cells; worst default_over_best {worst['default_over_best'] if worst else '-'}"
      + (f" ({worst['data']}, {worst['link_gbps']} GB/s, {worst['bytes']} B)" if worst else ""))
PY
command -v gnuplot > /dev/null && "$here/plot" --heatmap -o "${out%.json}.png" "$out" || true
