# tests/gpu/p2p_device: point-to-point with device buffers, run under mpirun with MPIZip preloaded
# by tests/gpu/run-p2p.sh on a GPU machine (it exits 77 elsewhere).
# tests/gpu/p2p_oom: the same when device memory or the pools run out (tests/gpu/run-p2p-oom.sh,
# which tests/gpu/run-p2p.sh calls).
# tests/gpu/p2p_semantics_device: tests/mpi/p2p_semantics.c with every message buffer in device
# memory (-DP2P_DEVICE_BUFFERS; not linked with MPIZip, like the host build, so that its plain run
# is plain), run by tests/gpu/run-p2p-semantics.sh, which tests/gpu/run-p2p.sh calls.
# tests/gpu/dtype_pairs_device: tests/mpi/dtype_pairs.c with device buffers
# (tests/gpu/dtype_pairs_device.sh).
# tests/gpu/p2p_progress_device: tests/mpi/p2p_progress.c (MPI's progress rule through MPIZip) with
# device message buffers (tests/gpu/p2p_progress_device.sh).
if HAVE_CUDA
check_PROGRAMS += tests/gpu/p2p_device tests/gpu/p2p_oom tests/gpu/p2p_semantics_device \
	tests/gpu/dtype_pairs_device tests/gpu/cuda_aware_device tests/gpu/p2p_progress_device
tests_gpu_p2p_progress_device_SOURCES = tests/mpi/p2p_progress.c
tests_gpu_p2p_progress_device_CPPFLAGS = $(AM_CPPFLAGS) -DP2P_PROGRESS_DEVICE
tests_gpu_p2p_progress_device_LDADD = -ldl $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests_gpu_cuda_aware_device_SOURCES = tests/gpu/cuda_aware_device.c
tests_gpu_cuda_aware_device_LDADD = -ldl $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests_gpu_dtype_pairs_device_SOURCES = tests/mpi/dtype_pairs.c
tests_gpu_dtype_pairs_device_CPPFLAGS = $(AM_CPPFLAGS) -DDTYPE_PAIRS_DEVICE
tests_gpu_dtype_pairs_device_LDADD = -ldl $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests_gpu_p2p_device_SOURCES = tests/gpu/p2p_device.cc
tests_gpu_p2p_device_LDADD = libmpizip.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests_gpu_p2p_oom_SOURCES = tests/gpu/p2p_oom.cc
tests_gpu_p2p_oom_LDADD = libmpizip.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests_gpu_p2p_semantics_device_SOURCES = tests/mpi/p2p_semantics.c
tests_gpu_p2p_semantics_device_CPPFLAGS = $(AM_CPPFLAGS) -DP2P_DEVICE_BUFFERS
tests_gpu_p2p_semantics_device_LDADD = -ldl $(CUDA_LDFLAGS) $(CUDA_LIBS)
TESTS += tests/gpu/run-p2p.sh tests/gpu/dtype_pairs_device.sh tests/gpu/cuda_aware.sh \
	tests/gpu/p2p_progress_device.sh
endif
EXTRA_DIST += tests/gpu/p2p_progress_device.sh tests/gpu/cuda_aware.sh tests/gpu/dtype_pairs_device.sh tests/gpu/run-p2p.sh tests/gpu/run-p2p-oom.sh tests/gpu/run-p2p-semantics.sh
