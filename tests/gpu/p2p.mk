# tests/gpu/p2p_device: point-to-point with device buffers, run under mpirun with MPIZip preloaded
# by tests/gpu/run-p2p.sh on a GPU machine (it exits 77 elsewhere).
if HAVE_CUDA
check_PROGRAMS += tests/gpu/p2p_device
tests_gpu_p2p_device_SOURCES = tests/gpu/p2p_device.cc
tests_gpu_p2p_device_LDADD = libmpizip.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
TESTS += tests/gpu/run-p2p.sh
endif
EXTRA_DIST += tests/gpu/run-p2p.sh
