# src/transport: byte movers (UCX, CUDA IPC, PMPI shadow communicator, emulated link).
libmpizip_core_la_SOURCES += src/transport/ucx_version.h src/transport/ucx_version.cc
