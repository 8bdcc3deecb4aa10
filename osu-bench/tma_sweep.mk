# The TMA intra-node collectives' benchmarks: the CTA sweep (osu-bench/tma_sweep.sh runs it and
# osu-bench/tma_sweep_table.py turns its output into results and the tuning table) and the GEMM
# overlap (cuBLAS); what sharing a GPU costs; the references of small device-buffer latency. MPI
# and the CUDA runtime only, like the other benchmarks.
if HAVE_CUDA
noinst_PROGRAMS += osu-bench/tma_sweep osu-bench/gemm_overlap
osu_bench_tma_sweep_SOURCES = osu-bench/tma_sweep.cc osu-bench/common/bench_util.h
osu_bench_tma_sweep_CPPFLAGS = $(osub_cppflags)
osu_bench_tma_sweep_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)
osu_bench_gemm_overlap_SOURCES = osu-bench/gemm_overlap.cc
osu_bench_gemm_overlap_CPPFLAGS = $(osub_cppflags)
osu_bench_gemm_overlap_LDADD = $(CUDA_LDFLAGS) -lcublas $(CUDA_LIBS)
# What sharing one GPU between two ranks costs (time-slicing vs MPS).
noinst_PROGRAMS += osu-bench/gpu_sharing
osu_bench_gpu_sharing_SOURCES = osu-bench/gpu_sharing.cc osu-bench/gpu_sharing_spin.cu
osu_bench_gpu_sharing_CPPFLAGS = $(osub_cppflags)
osu_bench_gpu_sharing_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)
# The references of small device-buffer latency: a cudaMemcpy round trip, and staging by hand.
noinst_PROGRAMS += osu-bench/staged_latency
osu_bench_staged_latency_SOURCES = osu-bench/staged_latency.cc
osu_bench_staged_latency_CPPFLAGS = $(osub_cppflags)
osu_bench_staged_latency_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)
# The floors of a small device message moved with one copy over CUDA IPC.
noinst_PROGRAMS += osu-bench/ipc_latency
osu_bench_ipc_latency_SOURCES = osu-bench/ipc_latency.cc osu-bench/ipc_latency_copy.cu
osu_bench_ipc_latency_CPPFLAGS = $(osub_cppflags)
osu_bench_ipc_latency_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif
dist_noinst_SCRIPTS += osu-bench/tma_sweep.sh osu-bench/gemm_overlap.sh osu-bench/tma_sweep_table.py
