// What the MPI library beneath MPIZip can do itself: whether it takes device buffers (a CUDA-aware
// Open MPI or MVAPICH, say). Where it does, device buffers that MPIZip neither compresses nor moves
// faster itself pass straight to it, unstaged (DESIGN.md, D4): point-to-point messages outside the
// protocol and every collective MPIZip does not run.
#pragma once

#include <string>

namespace mpizip::core {

struct CudaAwareness {
  bool aware = false;
  std::string how;  // what said so, or why not (for the log and mpizip-info)
};

// Asks, in order: MPIZIP_MPI_CUDA_AWARE (`setting`: 0 auto, 1 on, 2 off); the library's
// MPIX_Query_cuda_support, the next definition after MPIZip's own (dlsym(RTLD_NEXT); before
// MPI_Init only one outside the MPI library itself, since MPICH refuses MPIX_ calls then); Open
// MPI's control variable mpi_built_with_cuda_support (MPI_T, usable before MPI_Init). Callable
// before MPI_Init (mpizip-info) and after.
CudaAwareness find_mpi_cuda_awareness(int setting);

// The MPI library's own MPIX_Query_cuda_support() (the next definition after MPIZip's), 0 where it
// has none: what MPIX_Query_cuda_support answers where MPIZip does not answer for itself.
int library_cuda_support();

// The answer found at MPI_Init (false before).
bool mpi_cuda_aware();
void set_mpi_cuda_aware(bool aware);

}  // namespace mpizip::core
