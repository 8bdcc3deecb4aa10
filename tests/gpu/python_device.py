"""The mpizip Python package with device arrays on 2 ranks (run by tests/gpu/python_device.sh):

    python3 python_device.py cupy|torch

bf16, fp16 (and fp8 where the library has it) arrays on the GPU, sent with mpizip.buffer(a) and
[a, mpizip.datatype(a)], received bit-exact; with MPIZIP_STATS=1 MPIZip_Comm_traffic must show the
messages compressed. Exit 77 when the library or a GPU is missing.
"""
import sys

from mpi4py import MPI

import mpizip

lib = sys.argv[1]
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
N = 16 << 20  # elements per message: above MPIZIP_GPU_MIN_BYTES


def check(cond, what):
    if not cond:
        sys.stderr.write("rank %d: FAIL (%s): %s\n" % (rank, lib, what))
        sys.stderr.flush()
        comm.Abort(1)


try:
    if lib == "torch":
        import torch
        have = torch.cuda.is_available()
    else:
        import cupy
        have = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    have = False
if not comm.allreduce(have, op=MPI.LAND):
    if rank == 0:
        print("SKIP: %s with a GPU is not available" % lib)
    sys.exit(77)
check(mpizip.active(), "libmpizip is not active (preload it)")

if lib == "torch":
    torch.cuda.set_device(rank % torch.cuda.device_count())
    g = torch.Generator(device="cuda").manual_seed(19)
    w = torch.randn(N, generator=g, device="cuda") * 0.02
    arrays = {"bf16": w.to(torch.bfloat16), "fp16": w.to(torch.float16)}
    for attr, name in (("float8_e4m3fn", "fp8_e4m3"), ("float8_e5m2", "fp8_e5m2")):
        if hasattr(torch, attr):
            arrays[name] = (w * 50).to(getattr(torch, attr))
    empty_like = torch.empty_like

    def same(a, b):
        return bool(torch.equal(mpizip.buffer(a)[0], mpizip.buffer(b)[0]))

    def sync():
        torch.cuda.synchronize()
else:
    cupy.cuda.Device(rank % cupy.cuda.runtime.getDeviceCount()).use()
    w = cupy.random.RandomState(19).standard_normal(N, dtype=cupy.float32) * 0.02
    arrays = {"fp16": w.astype(cupy.float16),
              "bf16": (w.view(cupy.uint32) >> 16).astype(cupy.uint16)}  # bf16 bits
    try:
        import ml_dtypes  # CuPy arrays of ml_dtypes' bfloat16, where CuPy accepts them
        arrays["bf16_ml"] = w.astype(ml_dtypes.bfloat16)
    except Exception:
        pass
    empty_like = cupy.empty_like

    def same(a, b):
        return bool((mpizip.buffer(a)[0] == mpizip.buffer(b)[0]).all())

    def sync():
        cupy.cuda.Device().synchronize()

expected_types = {"bf16": mpizip.BF16, "fp16": mpizip.FP16, "fp8_e4m3": mpizip.FP8_E4M3,
                  "fp8_e5m2": mpizip.FP8_E5M2, "bf16_ml": mpizip.BF16}
sync()
sent = 0
for i, (name, a) in enumerate(sorted(arrays.items())):
    spec = mpizip.buffer(a)
    if lib == "cupy" and name == "bf16":
        spec = [spec[0], mpizip.BF16]  # uint16 holding bf16: the datatype says so
    check(spec[1] == expected_types[name], "datatype of %s: %s" % (name, spec[1].Get_name()))
    if rank == 0:
        comm.Send(spec, dest=1, tag=i)
        if name == "fp16":  # the array itself, with mpizip.datatype(a)
            comm.Send([a, mpizip.datatype(a)], dest=1, tag=100 + i)
            sent += 1
        sent += 1
    elif rank == 1:
        r = empty_like(a)
        rspec = [mpizip.buffer(r)[0], spec[1]]
        comm.Recv(rspec, source=0, tag=i)
        sync()
        check(same(r, a), "%s not bit-exact" % name)
        if name == "fp16":
            comm.Recv(rspec, source=0, tag=100 + i)
            sync()
            check(same(r, a), "%s (datatype form) not bit-exact" % name)
comm.Barrier()
t = mpizip.traffic(comm)
check(t is not None, "traffic()")
if rank == 0:
    check(t["sent_compressed"] >= sent, "sent compressed: %r (expected %d)" % (t, sent))
    print("python_device %s: ok, %r" % (lib, t), flush=True)
elif rank == 1:
    check(t["received_compressed"] >= 1, "received compressed: %r" % t)
