# kernels/cpu.mk: the CPU reference codec (docs/FORMAT.md). codec_cpu.h is its API.
libmpizip_core_la_SOURCES += \
	kernels/codec_cpu.h kernels/codec_cpu.cc kernels/encode_cpu.cc kernels/decode_cpu.cc kernels/fast_cpu.cc \
	kernels/stream_cpu.h kernels/split_cpu.h kernels/split_cpu.cc \
	kernels/ans_cpu.h kernels/ans_cpu.cc kernels/ans_simd_cpu.h kernels/ans_simd_cpu.cc
# The reductions' shared arithmetic and the CPU reduce.
libmpizip_core_la_SOURCES += kernels/reduce.h kernels/reduce_cpu.h kernels/reduce_cpu.cc
