#!/usr/bin/env python3
"""Weight synchronization: rank 0 sends a model's bf16 tensors to every other rank, timed, and every
receiver checks them bit-exact. NumPy on the CPU; CuPy or PyTorch on the GPU when present.

    mpizip-run -np 4 python3 examples/weight_sync.py --mib 512 --tensors 8
    mpirun -np 2 -x LD_PRELOAD=/usr/local/lib/libmpizip.so -x MPIZIP_STATS=1 \
        python3 examples/weight_sync.py --backend torch

MPIZip compresses device buffers; host buffers only with MPIZIP_HOST_COMPRESS=1. Put python/ (the
mpizip package) on PYTHONPATH. With MPIZIP_STATS=1 the example prints how many messages travelled
compressed and the wire/application byte ratio.
"""
import argparse
import sys
import time

from mpi4py import MPI

import mpizip


def backend_of(name):
    if name in ("auto", "torch"):
        try:
            import torch
            if torch.cuda.is_available():
                return "torch"
        except ImportError:
            pass
        if name == "torch":
            sys.exit("weight_sync: PyTorch with a GPU is not available")
    if name in ("auto", "cupy"):
        try:
            import cupy
            if cupy.cuda.runtime.getDeviceCount() > 0:
                return "cupy"
        except Exception:  # ImportError, or no CUDA driver
            pass
        if name == "cupy":
            sys.exit("weight_sync: CuPy with a GPU is not available")
    return "numpy"


class Backend:
    """Creates bf16 tensors (the same ones on every rank for a seed), compares, synchronizes."""

    def __init__(self, name, rank):
        self.name = name
        if name == "torch":
            import torch
            self.torch = torch
            torch.cuda.set_device(rank % torch.cuda.device_count())
        elif name == "cupy":
            import cupy
            self.cupy = cupy
            cupy.cuda.Device(rank % cupy.cuda.runtime.getDeviceCount()).use()
        else:
            import numpy
            self.np = numpy
            try:
                import ml_dtypes
                self.bf16 = ml_dtypes.bfloat16
            except ImportError:
                self.bf16 = None  # bf16 bits in uint16, sent as mpizip.BF16

    def weights(self, n, seed):
        """n bf16 values distributed as trained weights (normal, sigma 0.02)."""
        if self.name == "torch":
            g = self.torch.Generator(device="cuda").manual_seed(seed)
            return (self.torch.randn(n, generator=g, device="cuda") * 0.02).to(self.torch.bfloat16)
        if self.name == "cupy":
            w = self.cupy.random.RandomState(seed).standard_normal(n, dtype=self.cupy.float32) * 0.02
            return (w.view(self.cupy.uint32) >> 16).astype(self.cupy.uint16)
        w = (self.np.random.default_rng(seed).standard_normal(n, dtype=self.np.float32) * 0.02)
        if self.bf16 is not None:
            return w.astype(self.bf16)
        return (w.view(self.np.uint32) >> 16).astype(self.np.uint16)

    def empty_like(self, t):
        if self.name == "torch":
            return self.torch.empty_like(t)
        return (self.cupy if self.name == "cupy" else self.np).empty_like(t)

    def spec(self, t):
        """The message buffer: the tensor and MPIZip's bf16 datatype."""
        return [mpizip.buffer(t)[0], mpizip.BF16]  # uint16 arrays hold bf16 bits: say so

    def equal(self, a, b):
        if self.name == "torch":
            return bool(self.torch.equal(a.view(self.torch.int16), b.view(self.torch.int16)))
        return bool((mpizip.buffer(a)[0] == mpizip.buffer(b)[0]).all())

    def zero(self, t):
        if self.name == "torch":
            t.zero_()
        else:
            mpizip.buffer(t)[0].fill(0)

    def sync(self):
        if self.name == "torch":
            self.torch.cuda.synchronize()
        elif self.name == "cupy":
            self.cupy.cuda.Device().synchronize()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", type=float, default=512, help="total size of the tensors (MiB)")
    p.add_argument("--tensors", type=int, default=8, help="number of tensors")
    p.add_argument("--iters", type=int, default=3, help="timed repetitions (the best is shown)")
    p.add_argument("--backend", default="auto", choices=("auto", "numpy", "cupy", "torch"))
    p.add_argument("--seed", type=int, default=2024)
    args = p.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    be = Backend(backend_of(args.backend), rank)
    total = int(args.mib * 2**20) // 2  # bf16 elements
    n = [total // args.tensors] * args.tensors
    n[-1] += total - sum(n)
    expected = [be.weights(k, args.seed + i) for i, k in enumerate(n)]
    tensors = expected if rank == 0 else [be.empty_like(t) for t in expected]
    be.sync()

    best = float("inf")
    ok = True
    for _ in range(args.iters):
        comm.Barrier()
        t0 = time.perf_counter()
        if rank == 0:
            reqs = [comm.Isend(be.spec(t), dest=d, tag=i)
                    for d in range(1, size) for i, t in enumerate(tensors)]
        else:
            reqs = [comm.Irecv(be.spec(t), source=0, tag=i) for i, t in enumerate(tensors)]
        MPI.Request.Waitall(reqs)
        be.sync()
        comm.Barrier()
        best = min(best, time.perf_counter() - t0)
        if rank != 0:
            ok = ok and all(be.equal(t, e) for t, e in zip(tensors, expected))
            for t in tensors:  # so that the next repetition is checked afresh
                be.zero(t)
    ok = comm.allreduce(ok, op=MPI.LAND)

    t = mpizip.traffic(comm)
    if rank == 0:
        nbytes = 2 * total
        print("weight_sync: %s, %d ranks, %d tensors, %.1f MiB bf16 (%s): best of %d %.4f s, "
              "%.2f GB/s per receiver, %.2f GB/s out of rank 0"
              % (be.name, size, args.tensors, nbytes / 2**20,
                 "MPIZip %s" % mpizip.version() if mpizip.active() else "without MPIZip",
                 args.iters, best, nbytes / best / 1e9, nbytes * (size - 1) / best / 1e9))
        if t is not None and t["sent_messages"]:
            print("weight_sync: %d of %d messages sent compressed, wire/app bytes %.3f"
                  % (t["sent_compressed"], t["sent_messages"],
                     t["sent_wire_bytes"] / max(1, t["sent_app_bytes"])))
        print("weight_sync: %s" % ("bit-exact on every receiver" if ok else "MISMATCH"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
