#!/usr/bin/env python3
"""Merges one call's MPIZip and anchor codec benchmark JSON files (osu-bench/codec-h200.sh writes
them) into the layout of osu-bench/results/codec-h200.json, and prints the results README's tables:
bf16 uniform in full, then every type and data kind as speed (anchor time / MPIZip time) and size
(MPIZip ratio / anchor ratio) per size.

  codec_table.py MPIZIP_JSON ANCHOR_JSON --commit SHA --out codec-h200.json [--note TEXT]
"""
import argparse
import json
import sys

SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
NAMES = {1 << 20: "1 MiB", 4 << 20: "4 MiB", 16 << 20: "16 MiB", 64 << 20: "64 MiB", 256 << 20: "256 MiB",
         1 << 30: "1 GiB"}
TYPES = ["bf16", "fp16", "fp32", "fp64", "e4m3", "e5m2"]
DATA = ["uniform", "normal", "real"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpizip")
    ap.add_argument("anchor")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out")
    ap.add_argument("--note", default="")
    ap.add_argument("--mpizip-command", default="")
    ap.add_argument("--anchor-command", default="")
    a = ap.parse_args()
    m = json.load(open(a.mpizip))
    an = json.load(open(a.anchor))
    anchor_rows = an["rows"] if isinstance(an, dict) else an
    rows = [dict(codec="mpizip", **r) for r in m["rows"]] + [dict(codec="anchor", **r) for r in anchor_rows]
    if a.out:
        doc = {"gpu": m.get("gpu", ""), "commit": a.commit, "date": m.get("date", ""),
               "commands": {"mpizip": a.mpizip_command, "anchor": a.anchor_command}, "note": a.note, "rows": rows}
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    idx = {(r["codec"], r["type"], r["data"], r["bytes"]): r for r in rows}

    out = sys.stdout
    out.write("| size | MPIZip compress / decompress us | anchor compress / decompress us | speed compress / "
              "decompress | ratio MPIZip / anchor | size |\n| --- | --- | --- | --- | --- | --- |\n")
    for s in SIZES:
        p, q = idx.get(("mpizip", "bf16", "uniform", s)), idx.get(("anchor", "bf16", "uniform", s))
        if not p or not q:
            continue
        out.write(f"| {NAMES[s]} | {p['compress_us']:.1f} / {p['decompress_us']:.1f} | {q['compress_us']:.1f} / "
                  f"{q['decompress_us']:.1f} | {q['compress_us'] / p['compress_us']:.2f}x / "
                  f"{q['decompress_us'] / p['decompress_us']:.2f}x | {p['ratio']:.4f} / {q['ratio']:.4f} | "
                  f"{p['ratio'] / q['ratio']:.3f} |\n")
    out.write("\n| type | data | " + " | ".join(NAMES[s] for s in SIZES) + " |\n| --- | --- |" +
              " --- |" * len(SIZES) + "\n")
    for t in TYPES:
        for d in DATA:
            cells = []
            for s in SIZES:
                p, q = idx.get(("mpizip", t, d, s)), idx.get(("anchor", t, d, s))
                if not p or not q:
                    cells.append("-")
                    continue
                cells.append(f"{q['compress_us'] / p['compress_us']:.2f} / {q['decompress_us'] / p['decompress_us']:.2f}, "
                             f"{p['ratio'] / q['ratio']:.3f}")
            if any(c != "-" for c in cells):
                out.write(f"| {t} | {d} | " + " | ".join(cells) + " |\n")
    for d in DATA:
        p = idx.get(("mpizip", "fp64", d, 1 << 30))
        if p:
            out.write(f"\nfp64 {d} 1 GiB (no anchor): ratio {p['ratio']:.4f}, compress {p['compress_us']:.0f} us, "
                      f"decompress {p['decompress_us']:.0f} us")
    out.write("\n")


if __name__ == "__main__":
    main()
