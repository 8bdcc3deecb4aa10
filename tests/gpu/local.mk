# tests/gpu: GPU tests. They exit 77 (skipped) on machines without a GPU; tests/gpu/run.sh builds
# the project and runs them, the sanitizer pass and the codec benchmark on a GPU machine.
if HAVE_CUDA
if HAVE_GTEST
check_PROGRAMS += tests/gpu/codec_gpu_test
TESTS += tests/gpu/codec_gpu_test
tests_gpu_codec_gpu_test_SOURCES = tests/gpu/codec_gpu_test.cc
tests_gpu_codec_gpu_test_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(GTEST_LIBS)
# Where buffers live, cached (src/platform/pointer_kind.cc), against the runtime's answers.
check_PROGRAMS += tests/gpu/pointer_kind_test
TESTS += tests/gpu/pointer_kind_test
tests_gpu_pointer_kind_test_SOURCES = tests/gpu/pointer_kind_test.cc
tests_gpu_pointer_kind_test_LDADD = libmpizip_core.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(GTEST_LIBS)
endif
endif
# Collectives with device buffers staged through host memory (src/core/coll_staging.h), under
# mpirun with MPIZip preloaded, against the same calls on host buffers (tests/mpi/coll_cases.h).
if HAVE_CUDA
check_PROGRAMS += tests/gpu/coll_staged_device
tests_gpu_coll_staged_device_SOURCES = tests/gpu/coll_staged_device.cc tests/mpi/coll_cases.h
tests_gpu_coll_staged_device_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) -ldl
TESTS += tests/gpu/coll_staged_device.sh tests/gpu/coll_internode_device.sh
endif
EXTRA_DIST += tests/gpu/run.sh tests/gpu/coll_staged_device.sh tests/gpu/coll_internode_device.sh
# The TMA intra-node collectives: the planner and tuning choice on the CPU (every build); the
# collectives themselves on 2-4 ranks sharing the GPU (tests/gpu/run-tma.sh runs them, the
# sanitizer passes and the benchmarks on a GPU machine).
check_PROGRAMS += tests/gpu/tma_plan_test
TESTS += tests/gpu/tma_plan_test
tests_gpu_tma_plan_test_SOURCES = tests/gpu/tma_plan_test.cc
tests_gpu_tma_plan_test_LDADD = libmpizip_core.la
if HAVE_CUDA
check_PROGRAMS += tests/gpu/tma_coll
tests_gpu_tma_coll_SOURCES = tests/gpu/tma_coll.cc
tests_gpu_tma_coll_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) -ldl
TESTS += tests/gpu/tma_coll.sh
# A rank whose part fails, or whose settings differ: an MPI error on every rank, or MPIZip off for
# the communicator, never a GPU waiting forever.
check_PROGRAMS += tests/gpu/tma_fault
tests_gpu_tma_fault_SOURCES = tests/gpu/tma_fault.cc
tests_gpu_tma_fault_LDADD = $(CUDA_LDFLAGS) $(CUDA_LIBS) -ldl
TESTS += tests/gpu/tma_fault.sh
endif
EXTRA_DIST += tests/gpu/run-tma.sh tests/gpu/tma_coll.sh tests/gpu/tma_fault.sh
# Fortran device arrays (cudaMalloc through iso_c_binding) under MPIZip, built with use mpi and use
# mpi_f08 by the MPI Fortran compiler where configure found one (tests/fortran/local.mk says why
# these are not check_PROGRAMS); tests/gpu/run.sh builds them through `make gpu-fortran`.
FORTRAN_DEVICE = tests/gpu/fortran_device_usempi tests/gpu/fortran_device_f08
FORTRAN_DEVICE_SRC = $(srcdir)/tests/gpu/fortran_device.F90
# Each program writes its module files into its own folder: the two rules run together under make -j
# and would otherwise rename the same cuda_runtime.mod under each other.
FORTRAN_DEVICE_BUILD = $(MKDIR_P) $@-mod && $(MPIFC) $(MPIFCFLAGS) -J$@-mod
tests/gpu/fortran_device_usempi: $(FORTRAN_DEVICE_SRC) $(srcdir)/tests/fortran/expect.inc
	$(AM_V_GEN)$(FORTRAN_DEVICE_BUILD) -DUSE_MPI -o $@ $(FORTRAN_DEVICE_SRC) $(CUDA_LDFLAGS) $(CUDA_LIBS)
tests/gpu/fortran_device_f08: $(FORTRAN_DEVICE_SRC) $(srcdir)/tests/fortran/expect.inc
	$(AM_V_GEN)$(FORTRAN_DEVICE_BUILD) -DF08 -o $@ $(FORTRAN_DEVICE_SRC) $(CUDA_LDFLAGS) $(CUDA_LIBS)
GPU_FORTRAN =
if HAVE_CUDA
if HAVE_MPIFC
GPU_FORTRAN += $(FORTRAN_DEVICE)
endif
TESTS += tests/gpu/fortran_device.sh
endif
check_SCRIPTS += $(GPU_FORTRAN)
gpu-fortran: $(GPU_FORTRAN)
.PHONY: gpu-fortran
CLEANFILES += $(FORTRAN_DEVICE)
clean-local: clean-fortran-device-mod
clean-fortran-device-mod:
	-rm -rf tests/gpu/fortran_device_usempi-mod tests/gpu/fortran_device_f08-mod
.PHONY: clean-fortran-device-mod
EXTRA_DIST += tests/gpu/fortran_device.F90 tests/gpu/fortran_device.sh
