# kernels/gpu.mk: the GPU codec. Public header CUDA-free (codec_gpu.h); host launchers and the
# decoder's, split stage's and count stage's instantiations in codec_gpu.cu; the encoder's, one
# variant per file so that they compile side by side, in encode_wide.cu, encode_mid.cu,
# encode_narrow.cu and encode_stream.cu (encode_kernels.cuh); decoding fused with the reduce in
# decode_fold.cu; device templates, one role per file, in *.cuh.
noinst_HEADERS += kernels/codec_gpu.h kernels/ans_decode.cuh kernels/ans_encode.cuh kernels/ans_table.cuh \
	kernels/bytes.cuh kernels/lanes.cuh kernels/scan_state.cuh kernels/split.cuh kernels/split_stage.cuh kernels/count_stage.cuh \
	kernels/decode_fold.cuh kernels/encode_kernels.cuh \
	kernels/launch.h kernels/fast_gpu.h kernels/fast_gpu.cuh
EXTRA_DIST += kernels/NOTES-codec-gpu.md
if HAVE_CUDA
libmpizip_core_la_SOURCES += kernels/codec_gpu.cu kernels/encode_wide.cu kernels/encode_mid.cu kernels/encode_narrow.cu \
	kernels/encode_stream.cu kernels/decode_fold.cu kernels/fast_gpu.cu
endif
# The GPU reduce: CUDA-free header, kernel and launcher in reduce_gpu.cu.
noinst_HEADERS += kernels/reduce_gpu.h
if HAVE_CUDA
libmpizip_core_la_SOURCES += kernels/reduce_gpu.cu
endif
# The TMA engine of the intra-node collectives: CUDA-free header, kernels in tma_engine.cuh, the
# launcher in tma_engine.cu; a stub without CUDA.
noinst_HEADERS += kernels/tma_engine.h kernels/tma_engine.cuh
if HAVE_CUDA
libmpizip_core_la_SOURCES += kernels/tma_engine.cu
else
libmpizip_core_la_SOURCES += kernels/tma_engine_none.cc
endif
