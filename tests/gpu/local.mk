# tests/gpu: GPU tests. They exit 77 (skipped) on machines without a GPU; tests/gpu/run.sh builds
# the project and runs them, the sanitizer pass and the codec benchmark on a GPU machine.
if HAVE_CUDA
if HAVE_GTEST
check_PROGRAMS += tests/gpu/codec_gpu_test
TESTS += tests/gpu/codec_gpu_test
tests_gpu_codec_gpu_test_SOURCES = tests/gpu/codec_gpu_test.cc
tests_gpu_codec_gpu_test_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(GTEST_LIBS)
endif
endif
# Collectives with device buffers staged through host memory (src/core/coll_staging.h), under
# mpirun with MPIZip preloaded, against the same calls on host buffers (tests/mpi/coll_cases.h).
if HAVE_CUDA
check_PROGRAMS += tests/gpu/coll_staged_device
tests_gpu_coll_staged_device_SOURCES = tests/gpu/coll_staged_device.cc tests/mpi/coll_cases.h
tests_gpu_coll_staged_device_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) -ldl
TESTS += tests/gpu/coll_staged_device.sh
endif
EXTRA_DIST += tests/gpu/run.sh tests/gpu/coll_staged_device.sh
