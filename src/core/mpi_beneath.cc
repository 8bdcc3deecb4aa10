#include "src/core/mpi_beneath.h"

#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <cstring>

namespace mpizip::core {
namespace {

std::atomic<bool> g_aware{false};

// The MPI library's MPIX_Query_cuda_support, not MPIZip's own (which answers for MPIZip). Before
// MPI_Init (mpizip-info) only where another library than the MPI library itself defines it (a
// wrapper between the two): MPICH refuses MPIX_ calls before MPI_Init, and Open MPI's answer then
// comes from its control variable (built_with_cuda).
using Query = int (*)(void);
Query next_query(std::string* where, bool before_init) {
  auto q = reinterpret_cast<Query>(dlsym(RTLD_NEXT, "MPIX_Query_cuda_support"));
  if (q == nullptr) return nullptr;
  Dl_info theirs{}, ours{};
  if (dladdr(reinterpret_cast<void*>(q), &theirs) != 0 &&
      dladdr(reinterpret_cast<void*>(&find_mpi_cuda_awareness), &ours) != 0 &&
      theirs.dli_fbase == ours.dli_fbase) {
    return nullptr;
  }
  if (before_init) {
    Dl_info mpi{};
    void* init = dlsym(RTLD_NEXT, "PMPI_Init");
    if (init != nullptr && dladdr(init, &mpi) != 0 && mpi.dli_fbase == theirs.dli_fbase) {
      return nullptr;
    }
  }
  *where = theirs.dli_fname != nullptr ? theirs.dli_fname : "?";
  return q;
}

// Whether MPI is initialized and not yet finalized.
bool mpi_running() {
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

// Open MPI's build-time answer, through the tools interface. Open MPI 4.1's MPI_T_init_thread
// sets the MPI library's own thread level to the one it is asked for (ompi_mpi_thread_level):
// asked for less than the level MPI_Init granted, the library stops locking for the rest of the
// job while the application's threads go on calling it. So it is asked for the level in force.
bool built_with_cuda() {
  int level = MPI_THREAD_SINGLE;
  if (mpi_running() && PMPI_Query_thread(&level) != MPI_SUCCESS) return false;
  int provided = 0;
  if (PMPI_T_init_thread(level, &provided) != MPI_SUCCESS) return false;
  bool yes = false;
  int index = -1;
  if (PMPI_T_cvar_get_index("mpi_built_with_cuda_support", &index) == MPI_SUCCESS) {
    MPI_T_cvar_handle handle;
    int count = 0;
    if (PMPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      unsigned char value[16] = {0};
      if (count == 1 && PMPI_T_cvar_read(handle, value) == MPI_SUCCESS) {
        for (unsigned char b : value) yes = yes || b != 0;
      }
      PMPI_T_cvar_handle_free(&handle);
    }
  }
  PMPI_T_finalize();
  return yes;
}

}  // namespace

CudaAwareness find_mpi_cuda_awareness(int setting) {
  if (setting == 1) return {true, "MPIZIP_MPI_CUDA_AWARE=on"};
  if (setting == 2) return {false, "MPIZIP_MPI_CUDA_AWARE=off"};
  std::string where;
  if (Query q = next_query(&where, !mpi_running()); q != nullptr && q() == 1) {
    return {true, "MPIX_Query_cuda_support() of " + where + " returns 1"};
  }
  if (built_with_cuda()) return {true, "Open MPI's mpi_built_with_cuda_support is true"};
  return {false, "the MPI library does not say it takes device buffers"};
}

int library_cuda_support() {
  static const Query next = [] {
    std::string where;
    return next_query(&where, false);
  }();
  return next != nullptr ? next() : 0;
}

bool mpi_cuda_aware() { return g_aware.load(std::memory_order_relaxed); }
void set_mpi_cuda_aware(bool aware) { g_aware.store(aware, std::memory_order_relaxed); }

}  // namespace mpizip::core
