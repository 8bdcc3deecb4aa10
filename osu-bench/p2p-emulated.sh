#!/bin/bash
# Point-to-point over an emulated inter-node link: MPIZip's pipelines against the same link with
# compression off, osu_bw -d cuda (device buffers), every rank its own "node"
# (MPIZIP_FORCE_INTERNODE=1, MPIZIP_TRANSPORT=emulated, MPIZIP_EMU_GBPS). Writes the rows of
# osu-bench/results/p2p-h200.json ({"gpu","commit","date","rows":[{"pipeline","link_gbps","data",
# "bytes","plain_gbps","mpizip_gbps","ratio"}]}; "plain" is the uncompressed baseline on the same
# link) and a markdown table of them.
#
# usage: cd build && ../osu-bench/p2p-emulated.sh OUT_DIR [options]
#   --links "25 47 100"        link rates, GB/s
#   --pipelines "split encode-then-send chunked"
#   --data "uniform"           data kinds (real needs MPIZIP_REAL_WEIGHTS)
#   --sizes 262144:1073741824  osu_bw -m
#   --reps N                   alternating baseline/MPIZip pairs (default 3); medians per size
#   --env "K=V ..."            extra MPIZIP_* settings for both runs
#   -- OSU_ARGS...             extra osu_bw arguments (default -i 5 -x 1 -W 8)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: p2p-emulated.sh OUT_DIR [options]}; shift
links="25 47 100" pipelines="split encode-then-send chunked" datas=uniform
sizes=262144:1073741824 reps=3 extra= osu_args=(-i 5 -x 1 -W 8)
while [ $# -gt 0 ]; do
  case $1 in
    --links) links=$2; shift 2 ;;
    --pipelines) pipelines=$2; shift 2 ;;
    --data) datas=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --env) extra=$2; shift 2 ;;
    --) shift; osu_args=("$@"); break ;;
    *) echo "p2p-emulated: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
link_env() { echo "MPIZIP_FORCE_INTERNODE=1 MPIZIP_TRANSPORT=emulated MPIZIP_EMU_GBPS=$1 $extra"; }
for data in $datas; do
  for g in $links; do
    for p in $pipelines; do
      echo "== $data, $g GB/s, $p vs off"
      "$here/compare" --reps "$reps" --json "$out/bw_${data}_${g}_${p}.json" \
        --baseline "$(link_env "$g") MPIZIP_P2P_PIPELINE=off" \
        --env "$(link_env "$g") MPIZIP_P2P_PIPELINE=$p" \
        -- osu_bw -d cuda -T bf16 --data "$data" -m "$sizes" "${osu_args[@]}"
    done
  done
done
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
commit=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$out" "${gpu:-no GPU}" "$commit" "$reps" "${osu_args[*]}" <<'PY'
import glob, json, os, sys, datetime
out, gpu, commit, reps, args = sys.argv[1:6]
rows = []
for f in sorted(glob.glob(os.path.join(out, "bw_*.json"))):
    data, g, p = os.path.basename(f)[3:-5].split("_", 2)
    for r in json.load(open(f))["rows"]:
        # compare's figures are MB/s (10^6 bytes/s): GB/s = /1000
        rows.append({"pipeline": p, "link_gbps": float(g), "data": data, "bytes": r["size"],
                     "plain_gbps": round(r["plain"] / 1000, 2),
                     "mpizip_gbps": round(r["mpizip"] / 1000, 2), "ratio": r["speedup"]})
rows.sort(key=lambda r: (r["data"], r["link_gbps"], r["pipeline"], r["bytes"]))
doc = {"gpu": gpu, "commit": commit, "date": datetime.date.today().isoformat(),
       "command": "osu-bench/p2p-emulated.sh (osu_bw -d cuda -T bf16 " + args + "), " + reps +
                  " alternating runs, medians; plain = the same emulated link, MPIZIP_P2P_PIPELINE=off",
       "rows": rows}
json.dump(doc, open(os.path.join(out, "p2p-h200.json"), "w"), indent=1)
with open(os.path.join(out, "p2p-h200.md"), "w") as md:
    keys = sorted({(r["data"], r["link_gbps"]) for r in rows})
    for data, g in keys:
        sel = [r for r in rows if r["data"] == data and r["link_gbps"] == g]
        pls = sorted({r["pipeline"] for r in sel})
        md.write(f"\n{data}, {g:g} GB/s: GB/s (ratio over uncompressed)\n\n")
        md.write("| size | uncompressed | " + " | ".join(pls) + " |\n")
        md.write("| --- " * (len(pls) + 2) + "|\n")
        for b in sorted({r["bytes"] for r in sel}):
            cells = {r["pipeline"]: r for r in sel if r["bytes"] == b}
            base = next(iter(cells.values()))["plain_gbps"]
            md.write(f"| {b} | {base} | " + " | ".join(
                f"{cells[p]['mpizip_gbps']} ({cells[p]['ratio']:.2f})" if p in cells else "-"
                for p in pls) + " |\n")
print(open(os.path.join(out, "p2p-h200.md")).read())
PY
