# tests/ucx.mk: the UCX transport under MPI (tests/transport/ucx.sh). ucx_staged_test is the same
# program with a stand-in GPU runtime, so that the staging of device buffers runs without a GPU;
# it compiles the transport's sources itself instead of linking the library, which holds the real
# GPU code.
if HAVE_UCX
check_PROGRAMS += tests/transport/ucx_test tests/transport/ucx_staged_test
tests_transport_ucx_test_SOURCES = tests/transport/ucx_test.cc
tests_transport_ucx_test_LDADD = libmpizip_core.la
tests_transport_ucx_staged_test_SOURCES = tests/transport/ucx_test.cc \
	tests/transport/ucx_fake_device.cc src/transport/ucx.cc src/transport/ucx_transfer.cc \
	src/transport/ucx_worker.cc src/transport/staging.cc src/platform/buffers.cc src/platform/log.cc \
	src/platform/status.cc src/platform/topology.cc src/transport/node_map.cc src/transport/device_ops_none.cc \
	src/transport/mpi_calls.cc
# Own flags, so that the shared sources compile to objects of their own.
tests_transport_ucx_staged_test_CPPFLAGS = $(AM_CPPFLAGS)
tests_transport_ucx_staged_test_LDADD = $(UCX_LDFLAGS) $(UCX_LIBS) $(HWLOC_LDFLAGS) $(HWLOC_LIBS)
endif
TESTS += tests/transport/ucx.sh
EXTRA_DIST += tests/transport/ucx.sh
