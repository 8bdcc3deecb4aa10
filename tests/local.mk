# tests: unit tests (GoogleTest), MPI integration tests (under mpirun, with and without the
# preload), GPU tests (tests/gpu, run on a GPU machine by tests/gpu/run.sh), fuzz targets.

# MPI integration: programs built here, driven by shell scripts that launch them.
check_PROGRAMS += tests/mpi/smoke tests/mpi/threads tests/mpi/p2p_semantics tests/mpi/p2p_soak \
	tests/mpi/collectives tests/mpi/p2p_progress tests/mpi/dtype_pairs \
	tests/mpi/statuses tests/mpi/mt_probe tests/mpi/agreement tests/mpi/faults \
	tests/mpi/thread_level tests/mpi/lifetimes tests/mpi/arg_errors tests/mpi/own_types \
	tests/mpi/overlap_window tests/mpi/incompressible tests/mpi/when_to_compress
tests_mpi_agreement_SOURCES = tests/mpi/agreement.c
tests_mpi_faults_SOURCES = tests/mpi/faults.c
tests_mpi_agreement_LDADD = -ldl
tests_mpi_collectives_SOURCES = tests/mpi/collectives.cc tests/mpi/coll_cases.h
tests_mpi_smoke_SOURCES = tests/mpi/smoke.c
tests_mpi_threads_SOURCES = tests/mpi/threads.cc
tests_mpi_p2p_semantics_SOURCES = tests/mpi/p2p_semantics.c
tests_mpi_p2p_semantics_LDADD = -ldl
tests_mpi_p2p_soak_SOURCES = tests/mpi/p2p_soak.c
tests_mpi_p2p_progress_SOURCES = tests/mpi/p2p_progress.c
tests_mpi_p2p_progress_LDADD = -ldl
tests_mpi_dtype_pairs_SOURCES = tests/mpi/dtype_pairs.c tests/mpi/probe_error.h
tests_mpi_dtype_pairs_LDADD = -ldl
tests_mpi_statuses_SOURCES = tests/mpi/statuses.c
tests_mpi_mt_probe_SOURCES = tests/mpi/mt_probe.c tests/mpi/probe_error.h
tests_mpi_mt_probe_LDADD = -lpthread
tests_mpi_thread_level_SOURCES = tests/mpi/thread_level.c
tests_mpi_thread_level_LDADD = -lpthread
tests_mpi_lifetimes_SOURCES = tests/mpi/lifetimes.c
tests_mpi_arg_errors_SOURCES = tests/mpi/arg_errors.c
tests_mpi_own_types_SOURCES = tests/mpi/own_types.cc
tests_mpi_own_types_LDADD = -ldl
tests_mpi_overlap_window_SOURCES = tests/mpi/overlap_window.c
tests_mpi_incompressible_SOURCES = tests/mpi/incompressible.c
tests_mpi_when_to_compress_SOURCES = tests/mpi/when_to_compress.c
# A stand-in for a CUDA-aware MPI library, preloaded after libmpizip by tests/mpi/cuda_aware.sh.
check_LTLIBRARIES += tests/mpi/libcuda_aware_standin.la
tests_mpi_libcuda_aware_standin_la_SOURCES = tests/mpi/cuda_aware_standin.c
tests_mpi_libcuda_aware_standin_la_LDFLAGS = -module -avoid-version -rpath /nowhere
tests_mpi_libcuda_aware_standin_la_LIBADD = -ldl
# Preloaded into the ranks of the tests under MPICH: they yield the core when idle
# (tests/mpi/launcher.sh.in, tests/mpi/yield_launch.sh).
check_LTLIBRARIES += tests/mpi/libidle_yield.la
tests_mpi_libidle_yield_la_SOURCES = tests/mpi/idle_yield.c
tests_mpi_libidle_yield_la_LDFLAGS = -module -avoid-version -rpath /nowhere
tests_mpi_libidle_yield_la_LIBADD = -ldl
# The longest tests first (make check -j starts them in this order; 40-200 s each on 2 cores):
# a long one started last would run alone at the end.
TESTS += tests/mpi/p2p_semantics.sh tests/mpi/dtype_pairs.sh
include tests/coll.mk
include tests/transport.mk
include tests/ucx.mk
TESTS += tests/mpi/collectives.sh tests/mpi/p2p_progress.sh tests/mpi/p2p_soak.sh \
	tests/mpi/smoke.sh tests/mpi/threads.sh tests/mpi/stats.sh tests/mpi/settings.sh \
	tests/mpi/no_init.sh tests/mpi/mpizip_run.sh \
	tests/readme_settings.sh \
	tests/mpi/statuses.sh tests/mpi/mt_probe.sh tests/mpi/cuda_aware.sh tests/mpi/agreement.sh \
	tests/mpi/faults.sh tests/mpi/thread_level.sh tests/mpi/lifetimes.sh tests/mpi/arg_errors.sh \
	tests/mpi/own_types.sh tests/mpi/overlap_window.sh tests/mpi/incompressible.sh \
	tests/mpi/when_to_compress.sh
EXTRA_DIST += tests/mpi/agreement.sh tests/mpi/rank_env.sh tests/mpi/faults.sh tests/mpi/launcher.sh.in \
	tests/mpi/check.h
DISTCLEANFILES += tests/mpi/launcher.sh
EXTRA_DIST += tests/mpi/cuda_aware.sh tests/mpi/yield_launch.sh tests/tsan/run.sh tests/tsan/suppressions.txt tests/asan/run.sh tests/mpi/dtype_pairs.sh tests/mpi/statuses.sh tests/mpi/mt_probe.sh tests/mpi/p2p_progress.sh tests/mpi/mpizip_run.sh tests/hip_compile.sh tests/readme_settings.sh tests/mpi/p2p_semantics.sh tests/mpi/p2p_soak.sh tests/mpi/lib.sh tests/mpi/smoke.sh tests/mpi/threads.sh tests/mpi/stats.sh \
	tests/mpi/settings.sh tests/mpi/no_init.sh tests/mpi/collectives.sh \
	tests/mpi/thread_level.sh tests/mpi/lifetimes.sh tests/mpi/arg_errors.sh tests/mpi/own_types.sh \
	tests/mpi/overlap_window.sh tests/mpi/incompressible.sh tests/mpi/when_to_compress.sh

if HAVE_GTEST
check_PROGRAMS += tests/unit/settings_test tests/unit/p2p_recv_test tests/unit/buffers_test \
	tests/unit/pool_bounds_test tests/unit/topology_test tests/unit/page_cache_test \
	tests/unit/emulated_link_test tests/unit/stream_ratios_test tests/unit/cost_model_test
tests_unit_stream_ratios_test_SOURCES = tests/unit/stream_ratios_test.cc p2p/stream_ratios.cc
tests_unit_stream_ratios_test_LDADD = $(GTEST_LIBS) -lgtest_main
tests_unit_stream_ratios_test_CPPFLAGS = $(AM_CPPFLAGS)
tests_unit_cost_model_test_SOURCES = tests/unit/cost_model_test.cc cost/model.cc
tests_unit_cost_model_test_LDADD = $(GTEST_LIBS) -lgtest_main
tests_unit_cost_model_test_CPPFLAGS = $(AM_CPPFLAGS)
tests_unit_emulated_link_test_SOURCES = tests/unit/emulated_link_test.cc src/transport/emulated.cc
tests_unit_emulated_link_test_LDADD = $(GTEST_LIBS) -lgtest_main
# Its own object of emulated.cc (per-target flags), beside the library's libtool one.
tests_unit_emulated_link_test_CPPFLAGS = $(AM_CPPFLAGS)
tests_unit_page_cache_test_SOURCES = tests/unit/page_cache_test.cc
tests_unit_page_cache_test_LDADD = $(GTEST_LIBS) -lgtest_main
tests_unit_buffers_test_SOURCES = tests/unit/buffers_test.cc
tests_unit_buffers_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_topology_test_SOURCES = tests/unit/topology_test.cc
tests_unit_topology_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_pool_bounds_test_SOURCES = tests/unit/pool_bounds_test.cc
tests_unit_pool_bounds_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_settings_test_SOURCES = tests/unit/settings_test.cc
tests_unit_settings_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_p2p_recv_test_SOURCES = tests/unit/p2p_recv_test.cc
tests_unit_p2p_recv_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
TESTS += tests/unit/settings_test tests/unit/p2p_recv_test tests/unit/buffers_test \
	tests/unit/pool_bounds_test tests/unit/topology_test tests/unit/page_cache_test \
	tests/unit/emulated_link_test tests/unit/stream_ratios_test tests/unit/cost_model_test
endif

include tests/codec-cpu.mk
include tests/gpu/local.mk
include tests/gpu/p2p.mk
include tests/netns.mk
include tests/hints.mk
include tests/plain_landing.mk
include tests/fortran/local.mk

# Python (python/mpizip, mpi4py and NumPy): skipped where they are missing.
TESTS += tests/python/mpi4py.sh
EXTRA_DIST += tests/python/mpi4py.sh tests/python/mpizip_test.py python/mpizip/__init__.py \
	examples/weight_sync.py tests/gpu/python_device.sh tests/gpu/python_device.py
