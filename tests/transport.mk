# tests/transport.mk: the PMPI transport and the emulated link under MPI with host buffers
# (tests/transport/transport.sh), and with device buffers on a GPU machine
# (tests/gpu/transport_device.sh, run by tests/gpu/run.sh; it exits 77 elsewhere).
check_PROGRAMS += tests/transport/transport_test
tests_transport_transport_test_SOURCES = tests/transport/transport_test.cc tests/transport/harness.h
tests_transport_transport_test_LDADD = libmpizip_core.la
TESTS += tests/transport/transport.sh
EXTRA_DIST += tests/transport/transport.sh tests/gpu/transport_device.sh
if HAVE_CUDA
check_PROGRAMS += tests/gpu/transport_device
tests_gpu_transport_device_SOURCES = tests/gpu/transport_device.cc tests/transport/harness.h
tests_gpu_transport_device_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS)
TESTS += tests/gpu/transport_device.sh
endif
