# kernels: the codec (CPU reference and GPU), reduce kernels, the TMA engine.
libmpizip_core_la_SOURCES += kernels/format.h
include kernels/cpu.mk
include kernels/gpu.mk
