# osu-bench/codec-gpu.mk: the GPU codec benchmark, osu-bench/codec (generates its data on the GPU;
# see the header of osu-bench/codec.cu). Programs compile .cu sources to .o with nvcc directly (the .cu.o rule of Makefile.am).
if HAVE_CUDA
noinst_PROGRAMS += osu-bench/codec
osu_bench_codec_SOURCES = osu-bench/codec.cu osu-bench/common/bench_util.h
osu_bench_codec_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
osu_bench_codec_LINK = $(CXXLINK)
endif
# copy_bw: cudaMemcpy device to device, the reference of the CUDA IPC figures.
if HAVE_CUDA
noinst_PROGRAMS += osu-bench/copy_bw
osu_bench_copy_bw_SOURCES = osu-bench/copy_bw.cu
osu_bench_copy_bw_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)
osu_bench_copy_bw_LINK = $(CXXLINK)
endif
# fold: the two-shot owner's step alone, decoding then reducing against decoding inside the fold.
if HAVE_CUDA
noinst_PROGRAMS += osu-bench/fold
osu_bench_fold_SOURCES = osu-bench/fold.cc osu-bench/common/bench_util.h
osu_bench_fold_CPPFLAGS = $(osub_cppflags)
osu_bench_fold_LDADD = libmpizip_core.la $(osub_ldadd)
endif
# osu-bench/codec-h200.sh: tests, this benchmark and the anchor codec side by side on a GPU machine.
EXTRA_DIST += osu-bench/codec-h200.sh osu-bench/codec-fast.sh osu-bench/codec_fast_results.py osu-bench/codec_table.py
