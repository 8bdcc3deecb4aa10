// The C MPI_* entry points, generated from mpi_calls.def. Each is interpose::call_<name>
// (calls.h): it decides nothing itself.
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: declares MPIX_Query_cuda_support where it has it
#endif

#include "src/core/mpi_beneath.h"
#include "src/interpose/calls.h"

// The library builds with hidden visibility: what it exports says so.
#define MPIZIP_EXPORT __attribute__((visibility("default")))

#define MPIZIP_CALL(name, params, args, comm, bytes, handler)                              \
  extern "C" MPIZIP_EXPORT int MPI_##name params { return ::mpizip::interpose::call_##name args; }
#define MPIZIP_CALL_ALWAYS(name, params, args, handler)                                    \
  extern "C" MPIZIP_EXPORT int MPI_##name params { return ::mpizip::interpose::call_##name args; }
#include "src/interpose/mpi_calls.def"
#undef MPIZIP_CALL
#undef MPIZIP_CALL_ALWAYS

// MPIX_Query_cuda_support (Open MPI's cuda extension; MPICH has it too): whether device buffers may
// be passed to MPI. Yes where MPIZip stages or handles them in every call that takes a buffer
// (core::cuda_support); else the MPI library's own answer, the next definition in the search order
// (there is no PMPIX_ form), or 0 where the library has none.
extern "C" MPIZIP_EXPORT int MPIX_Query_cuda_support(void) {
  return ::mpizip::core::cuda_support() ? 1 : ::mpizip::core::library_cuda_support();
}

#if defined(MPIX_GPU_SUPPORT_CUDA)
// MPIX_GPU_query_support (MPICH's general form of the question, one GPU kind at a time): CUDA is
// supported where MPIX_Query_cuda_support says 1 for MPIZip; every other answer is the library's.
extern "C" MPIZIP_EXPORT int MPIX_GPU_query_support(int gpu_type, int* is_supported) {
  if (gpu_type == MPIX_GPU_SUPPORT_CUDA && is_supported != nullptr && ::mpizip::core::cuda_support()) {
    *is_supported = 1;
    return MPI_SUCCESS;
  }
  return PMPIX_GPU_query_support(gpu_type, is_supported);
}
#endif
