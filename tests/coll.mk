# tests/coll.mk: the collectives. Unit tests of the planner and the hello (coll_plan_test) and of the
# CPU reduce's arithmetic (reduce_cpu_test), every MPI datatype and op MPIZip reduces against the
# MPI library's own reduction (reduce_types_test); the two-shot allreduce under MPI on host buffers
# (tests/coll/allreduce.sh); on a GPU machine, the GPU reduce against the CPU's (reduce_gpu_test), decoding
# fused with the reduce against decoding then reducing (decode_fold_test), and
# the allreduce on device buffers (tests/gpu/allreduce_device.sh). The GPU tests exit 77 elsewhere.
check_PROGRAMS += tests/coll/allreduce_test
tests_coll_allreduce_test_SOURCES = tests/coll/allreduce_test.cc tests/coll/allreduce_check.h
tests_coll_allreduce_test_LDADD = -ldl
TESTS += tests/coll/allreduce.sh
EXTRA_DIST += tests/coll/allreduce.sh
check_PROGRAMS += tests/coll/bcast_test
tests_coll_bcast_test_SOURCES = tests/coll/bcast_test.cc tests/coll/allreduce_check.h
tests_coll_bcast_test_LDADD = -ldl
TESTS += tests/coll/bcast.sh
EXTRA_DIST += tests/coll/bcast.sh
check_PROGRAMS += tests/coll/scan_test
tests_coll_scan_test_SOURCES = tests/coll/scan_test.cc tests/coll/allreduce_check.h
tests_coll_scan_test_LDADD = -ldl
TESTS += tests/coll/scan.sh
EXTRA_DIST += tests/coll/scan.sh

if HAVE_GTEST
check_PROGRAMS += tests/unit/coll_plan_test tests/unit/reduce_cpu_test tests/unit/reduce_types_test
tests_unit_coll_plan_test_SOURCES = tests/unit/coll_plan_test.cc
tests_unit_coll_plan_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_reduce_cpu_test_SOURCES = tests/unit/reduce_cpu_test.cc
tests_unit_reduce_cpu_test_LDADD = libmpizip_core.la $(GTEST_LIBS) -lgtest_main
tests_unit_reduce_types_test_SOURCES = tests/unit/reduce_types_test.cc
tests_unit_reduce_types_test_LDADD = libmpizip_core.la $(GTEST_LIBS)
TESTS += tests/unit/coll_plan_test tests/unit/reduce_cpu_test tests/unit/reduce_types_test
endif

if HAVE_CUDA
check_PROGRAMS += tests/gpu/allreduce_device
tests_gpu_allreduce_device_SOURCES = tests/gpu/allreduce_device.cc tests/coll/allreduce_check.h
tests_gpu_allreduce_device_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) -ldl
TESTS += tests/gpu/allreduce_device.sh
if HAVE_GTEST
check_PROGRAMS += tests/gpu/reduce_gpu_test
tests_gpu_reduce_gpu_test_SOURCES = tests/gpu/reduce_gpu_test.cc tests/gpu/reduce_inputs.h
tests_gpu_reduce_gpu_test_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(GTEST_LIBS)
TESTS += tests/gpu/reduce_gpu_test
check_PROGRAMS += tests/gpu/decode_fold_test
tests_gpu_decode_fold_test_SOURCES = tests/gpu/decode_fold_test.cc tests/gpu/reduce_inputs.h
tests_gpu_decode_fold_test_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(GTEST_LIBS)
TESTS += tests/gpu/decode_fold_test
endif
endif
EXTRA_DIST += tests/gpu/allreduce_device.sh
# MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv and MPI_Scatterv as MPIZip point-to-point messages
# (src/core/coll_pairwise.h), against every sender's bytes (tests/coll/pairwise.sh).
check_PROGRAMS += tests/coll/pairwise_test
tests_coll_pairwise_test_SOURCES = tests/coll/pairwise_test.cc tests/coll/allreduce_check.h
tests_coll_pairwise_test_LDADD = -ldl
TESTS += tests/coll/pairwise.sh
EXTRA_DIST += tests/coll/pairwise.sh
# Non-blocking collectives within one node, deferred until every rank has said where its buffers are
# (src/core/coll_deferred.h): both ways, every result checked (tests/coll/node_nonblocking.sh).
TESTS += tests/coll/node_nonblocking.sh
EXTRA_DIST += tests/coll/node_nonblocking.sh
