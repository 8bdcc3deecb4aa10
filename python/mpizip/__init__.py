"""MPIZip from Python (mpi4py): its datatypes, and the right one for an array.

MPIZip is a PMPI interposer preloaded into the MPI program (``LD_PRELOAD=libmpizip.so`` or
``mpizip-run``); this package needs no build step. With it, a NumPy, CuPy or PyTorch array of
bf16, fp16 or fp8 values is sent with a datatype that MPIZip compresses::

    import mpizip
    comm.Send(mpizip.buffer(t), dest=1)        # or: comm.Send([t, mpizip.datatype(t)], dest=1)
    comm.Recv(mpizip.buffer(r), source=0)

``datatype(a)`` picks the datatype: bf16 -> ``BF16``, fp16 -> ``FP16``, float8 e4m3 (OCP ``e4m3fn``)
-> ``FP8_E4M3``, float8 e5m2 -> ``FP8_E5M2``, fp32 -> ``MPI.FLOAT``, fp64 -> ``MPI.DOUBLE``, other
NumPy types -> mpi4py's own (uint16 -> ``MPI.UNSIGNED_SHORT``, which MPIZip does not compress: send
a uint16 array holding bf16 bits as ``[a, mpizip.BF16]``, or declare it with ``declare``). ``buffer(a)`` returns ``[view, datatype(a)]``, where the view is one
mpi4py can read for every array library (PyTorch gives no CUDA array interface or buffer for
bfloat16 and float8 tensors, NumPy none for ml_dtypes' types): use it for those.

The datatypes exist from MPI_Init to MPI_Finalize (mpi4py calls MPI_Init when ``mpi4py.MPI`` is
imported). When libmpizip is not loaded in the process (``preloaded()`` is false), the 16-bit types
fall back to ``MPI.UINT16_T`` and the 8-bit ones to ``MPI.UINT8_T``: the same type signature, so
messages stay correct and match a peer that uses MPIZip's types, but they are not compressed.
``datatype(a, strict=True)`` (or ``MPIZIP_PY_STRICT=1`` in the environment) raises
``MPIZipNotLoaded`` instead.
"""

import ctypes
import os

from mpi4py import MPI

__all__ = ["MPIZipNotLoaded", "preloaded", "active", "version", "datatypes", "datatype", "buffer",
           "declare", "traffic", "BF16", "FP16", "FP8_E4M3", "FP8_E5M2"]


class MPIZipNotLoaded(RuntimeError):
    """libmpizip is not loaded in this process, or MPI is not initialized."""


# Element-type constants of include/mpizip.h (values of the MPIZIP_UINT*_ELEMENT attributes).
_ELEM = {"bf16": 1, "fp16": 2, "fp8_e4m3": 5, "fp8_e5m2": 6}
_SYMBOL = {"bf16": "MPIZip_bf16", "fp16": "MPIZip_fp16",
           "fp8_e4m3": "MPIZip_fp8_e4m3", "fp8_e5m2": "MPIZip_fp8_e5m2"}
_WIDTH = {"bf16": 2, "fp16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
_PUBLIC = {"BF16": "bf16", "FP16": "fp16", "FP8_E4M3": "fp8_e4m3", "FP8_E5M2": "fp8_e5m2"}

_lib = None
_cache = {}  # element name -> (C handle, MPI.Datatype); kept for the process's lifetime


def _handle_ctype(cls):
    """The C type of an MPI handle: a pointer (Open MPI) or an int (MPICH)."""
    return ctypes.c_int if MPI._sizeof(cls) == ctypes.sizeof(ctypes.c_int) else ctypes.c_void_p


def _library():
    """The process's libmpizip (found among the loaded libraries by its symbols), or None."""
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(None)  # every library loaded globally, LD_PRELOAD ones included
        try:
            lib.MPIZip_Version
        except AttributeError:
            lib = False
        else:
            lib.MPIZip_Version.restype = ctypes.c_char_p
            lib.MPIZip_Active.restype = ctypes.c_int
        _lib = lib
    return _lib or None


def preloaded():
    """True when libmpizip is loaded in this process (preloaded, or linked into it)."""
    return _library() is not None


def active():
    """True when libmpizip is loaded and active: between MPI_Init and MPI_Finalize, enabled."""
    lib = _library()
    return bool(lib is not None and lib.MPIZip_Active())


def version():
    """libmpizip's version as "MAJOR.MINOR.PATCH", or None when it is not loaded."""
    lib = _library()
    return lib.MPIZip_Version().decode() if lib is not None else None


def _from_handle(handle):
    """An mpi4py Datatype for a C handle, not owned by mpi4py (never freed by it)."""
    if hasattr(MPI.Datatype, "fromhandle"):  # mpi4py >= 4
        return MPI.Datatype.fromhandle(handle)
    dt = MPI.Datatype()  # mpi4py 3: write the handle into the object
    ctype = _handle_ctype(MPI.Datatype)
    ctypes.memmove(MPI._addressof(dt), ctypes.byref(ctype(handle)), ctypes.sizeof(ctype))
    return dt


def _strict(strict):
    return strict if strict is not None else os.environ.get("MPIZIP_PY_STRICT", "0") not in ("", "0")


def _element_type(name, strict=None):
    lib = _library()
    if lib is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        handle = _handle_ctype(MPI.Datatype).in_dll(lib, _SYMBOL[name]).value
        if handle and handle != _handle_of(MPI.DATATYPE_NULL):
            cached = _cache.get(name)
            if cached is None or cached[0] != handle:
                cached = (handle, _from_handle(handle))
                _cache[name] = cached
            return cached[1]
    if _strict(strict):
        raise MPIZipNotLoaded(
            "MPIZip datatype %s: libmpizip is not %s" % (name.upper(), "loaded in this process "
            "(run under mpizip-run, or mpirun -x LD_PRELOAD=.../libmpizip.so)" if lib is None
            else "active (MPI not initialized, finalized, or MPIZIP_ENABLE=0)"))
    return MPI.UINT16_T if _WIDTH[name] == 2 else MPI.UINT8_T


def _handle_of(obj):
    return MPI._handleof(obj)


def datatypes(strict=None):
    """{"bf16": ..., "fp16": ..., "fp8_e4m3": ..., "fp8_e5m2": ...} as mpi4py Datatypes."""
    return {name: _element_type(name, strict) for name in _SYMBOL}


def __getattr__(name):  # mpizip.BF16, mpizip.FP16, mpizip.FP8_E4M3, mpizip.FP8_E5M2
    if name in _PUBLIC:
        return _element_type(_PUBLIC[name])
    raise AttributeError("module 'mpizip' has no attribute %r" % name)


def _kind(a):
    """(library, element name) of an array: library is numpy, cupy or torch."""
    mod = type(a).__module__.split(".")[0]
    if mod == "torch":
        import torch
        names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
                 torch.float64: "fp64"}
        for attr, name in (("float8_e4m3fn", "fp8_e4m3"), ("float8_e5m2", "fp8_e5m2")):
            if hasattr(torch, attr):
                names[getattr(torch, attr)] = name
        return "torch", names.get(a.dtype, str(a.dtype))
    dtype = getattr(a, "dtype", None)
    if dtype is None:
        raise TypeError("mpizip.datatype: not an array: %r" % type(a))
    names = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
             "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}
    return ("cupy" if mod == "cupy" else "numpy"), names.get(getattr(dtype, "name", ""), dtype)


def datatype(a, strict=None):
    """The MPI datatype for the elements of a NumPy, CuPy or PyTorch array."""
    lib, name = _kind(a)
    if name == "fp32":
        return MPI.FLOAT
    if name == "fp64":
        return MPI.DOUBLE
    if name in _SYMBOL:
        return _element_type(name, strict)
    if lib != "torch":
        import numpy
        try:
            return getattr(MPI, "_typedict", {})[numpy.dtype(name).char]
        except (KeyError, TypeError):
            pass
    raise TypeError("mpizip.datatype: no MPI datatype for %s elements of type %s" % (lib, name))


def buffer(a, strict=None):
    """[view, datatype(a)]: a message buffer for mpi4py's Send/Recv and friends."""
    dt = datatype(a, strict)
    lib, name = _kind(a)
    if name in _SYMBOL:
        width = _WIDTH[name]
        if lib == "torch":
            import torch
            v = a.view(torch.int16 if width == 2 else torch.uint8)
            return [v if v.is_cuda else v.numpy(), dt]
        import numpy
        if lib == "cupy":
            import cupy
            return [a.view(cupy.uint16 if width == 2 else cupy.uint8), dt]
        return [a.view(numpy.uint16 if width == 2 else numpy.uint8), dt]
    if lib == "torch" and not a.is_cuda:
        return [a.numpy(), dt]
    return [a, dt]


def _comm_ctype():
    return _handle_ctype(MPI.Comm)


def declare(comm, element):
    """Declares that MPI.UINT16_T (bf16, fp16) or MPI.UINT8_T (fp8_e4m3, fp8_e5m2) buffers on
    `comm` hold `element` values, so MPIZip compresses them (the MPIZIP_UINT16_ELEMENT and
    MPIZIP_UINT8_ELEMENT attributes of include/mpizip.h). Call it on every rank of `comm`, before
    its first message of that type. Returns False (and does nothing) when libmpizip is not loaded."""
    if element not in _ELEM:
        raise ValueError("mpizip.declare: element is one of %s" % ", ".join(_ELEM))
    lib = _library()
    if lib is None or not active():
        return False
    sym = "MPIZip_uint16_element_keyval" if _WIDTH[element] == 2 else "MPIZip_uint8_element_keyval"
    keyval = ctypes.c_int.in_dll(lib, sym).value
    set_attr = lib.MPI_Comm_set_attr
    set_attr.argtypes = [_comm_ctype(), ctypes.c_int, ctypes.c_void_p]
    rc = set_attr(_handle_of(comm), keyval, ctypes.c_void_p(_ELEM[element]))
    if rc != MPI.SUCCESS:
        raise MPI.Exception(rc)
    return True


class _Traffic(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "sent_messages", "sent_compressed", "sent_app_bytes", "sent_wire_bytes",
        "received_messages", "received_compressed")]


def traffic(comm):
    """MPIZip's point-to-point protocol traffic of `comm` in this process (MPIZip_Comm_traffic) as
    a dict, or None when libmpizip is not active or does not know `comm`. Counted only with
    MPIZIP_STATS=1."""
    lib = _library()
    if lib is None:
        return None
    fn = lib.MPIZip_Comm_traffic
    fn.argtypes = [_comm_ctype(), ctypes.POINTER(_Traffic)]
    out = _Traffic()
    if fn(_handle_of(comm), ctypes.byref(out)) != MPI.SUCCESS:
        return None
    t = {n: getattr(out, n) for n, _ in _Traffic._fields_}
    sent, received = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    bare = lib.MPIZip_Comm_bare_messages
    bare.argtypes = [_comm_ctype(), ctypes.POINTER(ctypes.c_ulonglong),
                     ctypes.POINTER(ctypes.c_ulonglong)]
    if bare(_handle_of(comm), ctypes.byref(sent), ctypes.byref(received)) == MPI.SUCCESS:
        t["bare_sent"], t["bare_received"] = sent.value, received.value
    return t
