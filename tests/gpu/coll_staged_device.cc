// Every collective of tests/mpi/coll_cases.h with device buffers (cudaMalloc) under MPIZip, on a
// non-CUDA-aware MPI: blocking and non-blocking, MPI_IN_PLACE, root-only arguments, v- and
// w-variants with uneven counts and gaps, a strided MPI_Type_vector, an intercommunicator,
// neighbourhoods, several calls in flight at once. Each case runs first on host buffers, then
// three ways with device buffers: every buffer on the device; the even ranks' buffers on the
// device and the odd ranks' on the host; each rank with one buffer on the device and the next on
// the host. Every byte of every buffer (gaps and a guard after each included) must then equal the
// host run's. With COLL_SLAB=1 in the environment every device buffer is carved out of one 256 MiB
// allocation at offsets that move from case to case (as an application allocates once at its
// largest size; MPIZip's intra-node engine shares such buffers at any call size instead of
// staging them). Checks that MPIX_Query_cuda_support() says 1. Driven by
// tests/gpu/coll_staged_device.sh under mpirun with MPIZip preloaded; exits 77 without a GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/mpi/coll_cases.h"

namespace {

using namespace coll_cases;

#define CUDA(call) \
  CASES_CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

// The MPI's (or MPIZip's) answer, from the header where the MPI has the extension.
int query_cuda_support() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support();
#else
  auto q = reinterpret_cast<int (*)(void)>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
  return q != nullptr ? q() : 0;
#endif
}

enum class Placement { kDevice, kEvenRanks, kAlternate };
const char* placement_name(Placement p) {
  return p == Placement::kDevice      ? "all on the device"
         : p == Placement::kEvenRanks ? "even ranks on the device"
                                      : "alternate buffers on the device";
}
bool on_device(Placement p, size_t buffer) {
  switch (p) {
    case Placement::kDevice:
      return true;
    case Placement::kEvenRanks:
      return rank % 2 == 0;
    case Placement::kAlternate:
      return (buffer + static_cast<size_t>(rank)) % 2 == 0;
  }
  return false;
}

// COLL_SLAB=1: the one allocation device buffers are carved from, and where the next one starts.
char* slab = nullptr;
size_t slab_used = 0;
constexpr size_t kSlabBytes = size_t{256} << 20;

// Runs case `k` with its buffers placed as `p`; returns their bytes afterwards, guards included.
std::vector<std::vector<uint8_t>> run_placed(const Case& c, size_t k, int n, bool nb, Placement p) {
  static size_t runs = 0;
  slab_used = (runs++ % 7) * 4096;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<void*> ptrs;
  std::vector<bool> device;
  for (size_t i = 0; i < c.buffers.size(); ++i) {
    bytes.push_back(start_bytes(c, k, i, n));
    device.push_back(on_device(p, i));
    void* d = bytes.back().data();
    if (device.back()) {
      const size_t take = (bytes.back().size() + 255) / 256 * 256 + 256;
      CASES_CHECK(slab == nullptr || slab_used + take <= kSlabBytes, "the slab is full");
      if (slab != nullptr) {
        d = slab + slab_used;
        slab_used += take;
      } else {
        CUDA(cudaMalloc(&d, bytes.back().size()));
      }
      CUDA(cudaMemcpy(d, bytes.back().data(), bytes.back().size(), cudaMemcpyHostToDevice));
    }
    ptrs.push_back(d);
  }
  c.run(ptrs.data(), nb);
  for (size_t i = 0; i < ptrs.size(); ++i) {
    if (!device[i]) continue;
    CUDA(cudaMemcpy(bytes[i].data(), ptrs[i], bytes[i].size(), cudaMemcpyDeviceToHost));
    if (slab == nullptr) CUDA(cudaFree(ptrs[i]));
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  if (!gpu) std::printf("coll_staged_device: no GPU, skipped\n");
  // --gpu-present: only whether there is a GPU, for the driver script.
  if (!gpu || (argc > 1 && std::strcmp(argv[1], "--gpu-present") == 0)) return gpu ? 0 : 77;
  start_mpi(&argc, &argv);
  if (const char* e = std::getenv("COLL_SLAB"); e != nullptr && std::strcmp(e, "1") == 0)
    CUDA(cudaMalloc(&slab, kSlabBytes));
  const int support = query_cuda_support();
  CASES_CHECK(support == 1,
              "MPIX_Query_cuda_support() = %d: this test needs MPIZip preloaded on a GPU", support);
  // Arguments: the largest count to run (65537 by default); --exact: only the cases whose results
  // do not depend on the order in which ranks' floats are reduced (MPIZip's engine folds in rank
  // order, the MPI library in its own: the same bits on 2 ranks, not always on more).
  int max_count = 65537;
  bool exact_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--exact") == 0)
      exact_only = true;
    else
      max_count = std::atoi(argv[i]);
  }
  auto order_dependent = [](const std::string& name) {
    const bool floats = name.find("float") != std::string::npos || name.find("double") != std::string::npos;
    const bool reduces = name.find("reduce") != std::string::npos || name.find("scan") != std::string::npos;
    return floats && reduces;
  };
  int checked = 0;
  // COLL_STAGED_TRACE=1: rank 0 prints each run and its time as it finishes (to find a slow case).
  const bool trace = std::getenv("COLL_STAGED_TRACE") != nullptr && rank == 0;
  {
    World w;
    for (int n : {0, 1, 1000, 65537}) {
      if (n > max_count) continue;
      std::vector<Case> all = cases(w, n);
      for (size_t k = 0; k < all.size(); ++k) {
        if (exact_only && order_dependent(all[k].name)) continue;
        for (bool nb : {false, true}) {
          if (nb && !all[k].has_nonblocking) continue;
          const auto want = run_on_host(all[k], k, n, nb);
          for (Placement p : {Placement::kDevice, Placement::kEvenRanks, Placement::kAlternate}) {
            const double t0 = MPI_Wtime();
            const auto got = run_placed(all[k], k, n, nb, p);
            if (trace) {
              std::printf("trace: %s%s n=%d %s: %.3f ms\n", all[k].name.c_str(), nb ? " (nb)" : "", n,
                          placement_name(p), (MPI_Wtime() - t0) * 1e3);
              std::fflush(stdout);
            }
            for (size_t i = 0; i < want.size(); ++i) {
              size_t at = 0;
              while (at < want[i].size() && want[i][at] == got[i][at]) ++at;
              CASES_CHECK(at == want[i].size(),
                          "%s%s, n=%d, %s: buffer %zu differs from the host run at byte %zu of %zu",
                          all[k].name.c_str(), nb ? " (non-blocking)" : "", n, placement_name(p),
                          i, at, want[i].size() - kGuard);
            }
            ++checked;
          }
        }
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("coll_staged_device: ok on %d ranks, %d runs bit-exact against host buffers\n",
                size, checked);
  }
  MPI_Finalize();
  return 0;
}
