// Every collective of tests/mpi/coll_cases.h on host buffers, blocking and non-blocking, at several
// counts; rank 0 prints one digest line per case (the bytes of every buffer on every rank, guards
// included). tests/mpi/collectives.sh runs it without MPIZip and with it in several settings, and
// the digests must be the same: with host buffers MPIZip hands every collective to the MPI library
// unchanged. Also checks MPIX_Query_cuda_support() against --cuda-support N (default 0: a job
// without a GPU, where MPIZip leaves the answer to the MPI library, which here is not CUDA-aware).
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/mpi/coll_cases.h"

using namespace coll_cases;

int main(int argc, char** argv) {
  start_mpi(&argc, &argv);
  int expect = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--cuda-support") == 0) expect = std::atoi(argv[i + 1]);
  }
  // Open MPI's mpi-ext.h declares MPIX_Query_cuda_support; MPICH's mpi.h declares it and
  // MPIX_GPU_query_support, its general form.
#if defined(MPIX_CUDA_AWARE_SUPPORT) || defined(MPIX_GPU_SUPPORT_CUDA)
  const int support = MPIX_Query_cuda_support();
  CASES_CHECK(support == expect, "MPIX_Query_cuda_support() = %d, expected %d", support, expect);
#else
  if (rank == 0) std::printf("MPIX_Query_cuda_support: not in this MPI\n");
#endif
#if defined(MPIX_GPU_SUPPORT_CUDA)
  int gpu_support = -1;
  const int gpu_rc = MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &gpu_support);
  CASES_CHECK(gpu_rc == MPI_SUCCESS && gpu_support == expect,
              "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) = %d (rc %d), expected %d", gpu_support,
              gpu_rc, expect);
#endif
  {
    World w;
    for (int n : {0, 1, 1000, 65537}) {
      std::vector<Case> all = cases(w, n);
      for (size_t k = 0; k < all.size(); ++k) {
        for (bool nb : {false, true}) {
          if (nb && !all[k].has_nonblocking) continue;
          uint64_t h = digest(nullptr, 0);
          for (const auto& b : run_on_host(all[k], k, n, nb)) h = digest(b.data(), b.size(), h);
          std::vector<unsigned long long> hs(static_cast<size_t>(size));
          unsigned long long mine = h;
          MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, hs.data(), 1, MPI_UNSIGNED_LONG_LONG, 0,
                     MPI_COMM_WORLD);
          if (rank != 0) continue;
          std::printf("digest n=%d %s%s:", n, all[k].name.c_str(), nb ? " (non-blocking)" : "");
          for (unsigned long long x : hs) std::printf(" %016llx", x);
          std::printf("\n");
        }
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("collectives: ok on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
