"""The mpizip Python package on 2 ranks with host buffers (run by tests/python/mpi4py.sh).

    python3 mpizip_test.py mpizip   # libmpizip preloaded, MPIZIP_HOST_COMPRESS=1 MPIZIP_MIN_BYTES=0
                                    # MPIZIP_STATS=1: messages compressed, bit-exact
    python3 mpizip_test.py plain    # no libmpizip: the fallback datatypes, bit-exact
"""
import sys

import numpy as np
from mpi4py import MPI

import mpizip

mode = sys.argv[1]
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
assert comm.Get_size() == 2, "run on 2 ranks"
N = 1 << 20  # elements per message


def check(cond, what):
    if not cond:
        sys.stderr.write("rank %d: FAIL: %s\n" % (rank, what))
        sys.stderr.flush()
        comm.Abort(1)


def payloads():
    """The same arrays on both ranks: weight-like values, every special pattern at the front."""
    rng = np.random.default_rng(19)
    w = (rng.standard_normal(N) * 0.02).astype(np.float32)
    bf16 = (w.view(np.uint32) >> 16).astype(np.uint16)
    bf16[:1 << 16] = np.arange(1 << 16, dtype=np.uint16)[: min(N, 1 << 16)]  # NaNs, infs, -0, subnormals
    fp16 = w.astype(np.float16)
    fp16.view(np.uint16)[:1 << 16] = np.arange(1 << 16, dtype=np.uint16)
    # fp8: random sign and mantissa, exponents concentrated as in trained weights.
    e4 = (rng.integers(0, 2, N) << 7 | np.clip(rng.normal(5, 1.2, N), 0, 15).astype(np.int64) << 3
          | rng.integers(0, 8, N)).astype(np.uint8)
    e5 = (rng.integers(0, 2, N) << 7 | np.clip(rng.normal(11, 1.5, N), 0, 31).astype(np.int64) << 2
          | rng.integers(0, 4, N)).astype(np.uint8)
    e4[:256] = np.arange(256, dtype=np.uint8)
    e5[:256] = np.arange(256, dtype=np.uint8)
    return {"bf16": bf16, "fp16": fp16, "fp8_e4m3": e4, "fp8_e5m2": e5, "fp32": w,
            "fp64": w.astype(np.float64)}


# The datatypes.
loaded = mode == "mpizip"
check(mpizip.preloaded() == loaded and mpizip.active() == loaded, "preloaded() / active()")
types = mpizip.datatypes()
if loaded:
    check(mpizip.version().count(".") == 2, "version()")
    for name, size in (("bf16", 2), ("fp16", 2), ("fp8_e4m3", 1), ("fp8_e5m2", 1)):
        dt = types[name]
        check(dt.Get_name() == "MPIZIP_" + name.upper(), "name of %s: %s" % (name, dt.Get_name()))
        check(dt.Get_size() == size and dt.Get_extent() == (0, size), "size of " + name)
        check(dt == getattr(mpizip, name.upper()), "mpizip.%s" % name.upper())
        check(dt != MPI.UINT16_T and dt != MPI.UINT8_T, name + " is not the fallback")
else:
    check(mpizip.version() is None and mpizip.traffic(comm) is None, "version() / traffic()")
    check(types["bf16"] == MPI.UINT16_T and types["fp16"] == MPI.UINT16_T, "16-bit fallback")
    check(types["fp8_e4m3"] == MPI.UINT8_T and types["fp8_e5m2"] == MPI.UINT8_T, "8-bit fallback")
    try:
        mpizip.datatype(np.zeros(4, np.float16), strict=True)
        check(False, "strict=True without libmpizip did not raise")
    except mpizip.MPIZipNotLoaded:
        pass
    check(mpizip.declare(comm, "bf16") is False, "declare() without libmpizip")

# datatype() for arrays.
check(mpizip.datatype(np.zeros(4, np.float16)) == types["fp16"], "datatype(float16)")
check(mpizip.datatype(np.zeros(4, np.float32)) == MPI.FLOAT, "datatype(float32)")
check(mpizip.datatype(np.zeros(4, np.float64)) == MPI.DOUBLE, "datatype(float64)")
check(mpizip.datatype(np.zeros(4, np.int32)) == MPI.INT32_T or
      mpizip.datatype(np.zeros(4, np.int32)) == MPI.INT, "datatype(int32)")
try:
    import ml_dtypes
    check(mpizip.datatype(np.zeros(4, ml_dtypes.bfloat16)) == types["bf16"], "datatype(bfloat16)")
    check(mpizip.datatype(np.zeros(4, ml_dtypes.float8_e4m3fn)) == types["fp8_e4m3"], "e4m3fn")
    check(mpizip.datatype(np.zeros(4, ml_dtypes.float8_e5m2)) == types["fp8_e5m2"], "e5m2")
    b = np.zeros(4, ml_dtypes.bfloat16)
    check(mpizip.buffer(b)[0].dtype == np.uint16, "buffer(bfloat16) views as uint16")
except ImportError:
    pass

# Transfers from rank 0 to rank 1, each checked bit-exact.
data = payloads()
sends = 0
declared = comm.Dup()
mpizip.declare(declared, "bf16")
cases = [("bf16", comm, lambda a: [a, mpizip.BF16]),
         ("fp16", comm, lambda a: [a, mpizip.datatype(a)]),
         ("fp8_e4m3", comm, lambda a: [a, mpizip.FP8_E4M3]),
         ("fp8_e5m2", comm, lambda a: [a, mpizip.FP8_E5M2]),
         ("fp32", comm, mpizip.buffer),
         ("fp64", comm, mpizip.buffer),
         ("bf16", declared, lambda a: [a, MPI.UINT16_T])]  # declared by the communicator attribute
for i, (name, c, spec) in enumerate(cases):
    a = data[name]
    if rank == 0:
        c.Send(spec(a), dest=1, tag=i)
        req = c.Isend(spec(a), dest=1, tag=100 + i)
        req.Wait()
    else:
        r = np.empty_like(a)
        c.Recv(spec(r), source=0, tag=i)
        check(r.tobytes() == a.tobytes(), "%s Send/Recv on %s not bit-exact" % (name, c.Get_name()))
        r[:] = 0
        st = MPI.Status()
        c.Irecv(spec(r), source=0, tag=100 + i).Wait(st)
        check(r.tobytes() == a.tobytes(), "%s Isend/Irecv not bit-exact" % name)
        check(st.Get_count(spec(r)[1]) == a.size, "%s status count" % name)
comm.Barrier()

# The messages took MPIZip's protocol, compressed (MPIZip_Comm_traffic; MPIZIP_STATS=1).
if loaded:
    for c, n in ((comm, 12), (declared, 2)):
        t = mpizip.traffic(c)
        check(t is not None, "traffic(%s)" % c.Get_name())
        if rank == 0:
            # A send is counted once MPIZip has reaped its internal requests (all of them by
            # MPI_Finalize, whose MPIZIP_STATS lines tests/python/mpi4py.sh checks): no exact count.
            check(t["sent_compressed"] == t["sent_messages"], "all sent compressed: %r" % t)
            check(t["sent_wire_bytes"] <= t["sent_app_bytes"], "compressed no larger: %r" % t)
        else:
            check(t["received_messages"] == n and t["received_compressed"] == n,
                  "received compressed on %s: %r" % (c.Get_name(), t))
            check(t["bare_received"] == 0, "no bare messages: %r" % t)
        print("rank %d %s: %r" % (rank, c.Get_name(), t), flush=True)
declared.Free()
if rank == 0:
    print("mpizip_test %s: ok" % mode, flush=True)
