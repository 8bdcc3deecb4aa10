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
EXTRA_DIST += tests/gpu/run.sh
