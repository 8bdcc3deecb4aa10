#!/usr/bin/env python3
"""Cost model of MPIZip's collectives against NCCL's ring and tree (docs/DESIGN.md, "Cost model").

Each algorithm's time is a sum of latency terms (alpha: a fixed cost per step) and bandwidth terms
(bytes over a rate), with the constants fitted to measurements recorded in osu-bench/results/:

  engine   the intra-node engine, one kernel per call: alpha_e = 19 us (the engine's calls of
           1 MiB on 2 ranks sharing an H100 under MPS took 20.2-24.8 us; 16 -> 64 MiB gives the
           slope), bytes each rank moves / beta_e, beta_e per kind from the 16 -> 64 MiB slope:
           bcast 665, allgather 223, alltoall 163, reduce-scatter 142, allreduce 172 GB/s
           (collectives-h100-2026-12-06; ranks sharing one GPU share its HBM, so on separate GPUs
           over NVLink these rates are a floor).
  codec    the GPU codec on bf16 (codec-h200.json, v17): encode 888 GB/s, decode 1,030 GB/s of
           input from 256 MiB up, 30 us a call; ratio r = 0.63 (U[-1,1]) to 0.67 (trained
           weights).
  link     per-rank network rate beta (GB/s per direction) and alpha_n = 5 us a message.

Algorithms (P = N x G ranks, N nodes of G GPUs, B bytes):

  Every GPU has its own NIC of rate beta (rail-optimised nodes, as NCCL's channels use them).

  NCCL ring allreduce       2 (P-1)/P B / (G beta) + 2 (P-1) alpha_n: G rings, one a NIC, each
                            carrying 1/G of the data across the node boundary
  NCCL tree allreduce       2 B / (G beta) + 2 log2(N) alpha_n (double binary trees between
                            nodes, chains within; the NVLink stage left out, in NCCL's favour)
  two-shot, flat            each rank sends P-1 pieces of B/P a phase, P-G of them off the node:
                            max(2 (P-G)/P B r / beta, codec(B)) + 2 (P-1) alpha_n, where codec(S)
                            = S/encode + 2 S/decode + 2 codec calls (a rank encodes about its whole
                            buffer and decodes it twice); P <= 64 (coll::kMaxRanks)
  hierarchical (designed,   engine reduce-scatter over G, the two-shot of B/G over the N ranks of
  not built)                one local index, engine allgather over G: 2 alpha_e + B/beta_rs +
                            B/beta_ag + the two-shot of B/G over N
  scatter-allgather bcast   the two-shot's wire term without the fold: 2 (P-G)/P B r / beta

Prints predicted times (ms) for B and link rates given on the command line.
"""
import argparse
import math

ALPHA_N = 5e-6
ALPHA_E = 19e-6
BETA_E = {"bcast": 665e9, "allgather": 223e9, "alltoall": 163e9, "reduce_scatter": 142e9,
          "allreduce": 172e9}
ENC, DEC, ALPHA_C = 888e9, 1030e9, 30e-6


def ring(N, G, B, beta):
    P = N * G
    return 2 * (P - 1) / P * B / (G * beta) + 2 * (P - 1) * ALPHA_N


def tree(N, G, B, beta):
    return 2 * B / (G * beta) + 2 * max(1.0, math.log2(N)) * ALPHA_N


def codec(S):
    return S / ENC + 2 * S / DEC + 2 * ALPHA_C


def twoshot(N, G, B, beta, r):
    """The flat two-shot over N nodes of G ranks."""
    P = N * G
    if P < 2:
        return 0.0
    wire = 2 * (P - G) / P * B * r / beta
    return max(wire, codec(B)) + 2 * (P - 1) * ALPHA_N


def hierarchical(N, G, B, beta, r, nvlink):
    """nvlink: the intra-node rate per GPU (bytes/s); None: the engine's measured rates."""
    if nvlink is None:
        intra = B / BETA_E["reduce_scatter"] + B / BETA_E["allgather"]
    else:
        intra = 2 * (G - 1) / G * B / nvlink
    return 2 * ALPHA_E + intra + twoshot(N, 1, B / G, beta, r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bytes", type=float, default=256 * 2**20)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--gbps", type=float, nargs="+", default=[12.5, 50.0])
    ap.add_argument("--ratio", type=float, default=0.63)
    ap.add_argument("--nvlink", type=float, default=450.0,
                    help="intra-node rate per GPU, GB/s (0: the engine's rates measured on ranks "
                         "sharing one H100)")
    a = ap.parse_args()
    B, G, r = a.bytes, a.gpus, a.ratio
    nv = a.nvlink * 1e9 if a.nvlink > 0 else None
    print(f"allreduce of {B / 2**20:.0f} MiB bf16, nodes of {G} GPUs, ratio {r}, intra-node "
          + (f"{a.nvlink:g} GB/s" if nv else "the engine's measured rates") + ": predicted ms")
    for g in a.gbps:
        beta = g * 1e9
        print(f"\nlink {g:g} GB/s per GPU")
        print("| nodes | NCCL ring | NCCL tree | MPIZip flat two-shot | MPIZip hierarchical |")
        print("| --- | --- | --- | --- | --- |")
        for N in [2, 4, 8, 16, 64, 256, 1024]:
            flat = twoshot(N, G, B, beta, r) if N * G <= 64 else float("nan")
            print(f"| {N} | {ring(N, G, B, beta) * 1e3:.2f} | {tree(N, G, B, beta) * 1e3:.2f} | "
                  + ("-" if math.isnan(flat) else f"{flat * 1e3:.2f}")
                  + f" | {hierarchical(N, G, B, beta, r, nv) * 1e3:.2f} |")


if __name__ == "__main__":
    main()
