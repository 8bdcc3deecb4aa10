# src/transport: byte movers (UCX, CUDA IPC, PMPI shadow communicator, emulated link).
libmpizip_core_la_SOURCES += src/transport/ucx_version.h src/transport/ucx_version.cc
# UCX transport (src/transport/ucx.h): the transport and its set-up, its data path, the process's
# ucp worker; kUnsupported in builds without UCX.
libmpizip_core_la_SOURCES += src/transport/ucx.h
if HAVE_UCX
libmpizip_core_la_SOURCES += src/transport/ucx.cc src/transport/ucx_transfer.h \
	src/transport/ucx_transfer.cc src/transport/ucx_worker.h src/transport/ucx_worker.cc
else
libmpizip_core_la_SOURCES += src/transport/ucx_none.cc
endif
# The transports' common entry (create(), transport.h) and the PMPI transport: node-local with
# CUDA IPC, portable fallback, emulated link (src/transport/pmpi.h). device_ops wraps the GPU runtime
# calls they make, with a GPU-less stand-in.
libmpizip_core_la_SOURCES += src/transport/transport.h src/transport/transport.cc src/transport/node_map.cc \
	src/transport/mpi_calls.h src/transport/mpi_calls.cc \
	src/transport/pmpi.h src/transport/pmpi.cc \
	src/transport/segments.h src/transport/segments.cc \
	src/transport/staging.h src/transport/staging.cc \
	src/transport/ipc.h src/transport/ipc.cc \
	src/transport/node_flags.h src/transport/node_flags.cc \
	src/transport/emulated.h src/transport/emulated.cc \
	src/transport/device_ops.h
if HAVE_GPU
libmpizip_core_la_SOURCES += src/transport/device_ops_gpu.cc
else
libmpizip_core_la_SOURCES += src/transport/device_ops_none.cc
endif
