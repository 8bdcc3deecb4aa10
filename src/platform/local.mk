# src/platform: GPU portability, device discovery, topology, logging, the status type.
libmpizip_core_la_SOURCES += \
	src/platform/status.h src/platform/status.cc \
	src/platform/log.h src/platform/log.cc \
	src/platform/gpu.h src/platform/device.h src/platform/operation.h src/platform/page_cache.h \
	src/platform/topology.h src/platform/topology.cc \
	src/platform/buffers.h src/platform/buffers.cc \
	src/platform/gpu_timing.h src/platform/gpu_timing.cc
if HAVE_GPU
libmpizip_core_la_SOURCES += src/platform/device_gpu.cc src/platform/pointer_kind.cc
else
libmpizip_core_la_SOURCES += src/platform/device_none.cc
endif
