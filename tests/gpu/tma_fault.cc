// The TMA intra-node collectives when a rank's part fails or its settings differ (coll/tma_coll.h,
// src/core/agreement.h), 2 ranks sharing the GPU, under MPIZip (tests/gpu/tma_fault.sh).
//
//   tma_fault fail   every rank's MPI_Allreduce of device floats must return an MPI error (under
//                    MPI_ERRORS_RETURN) in bounded time: one rank runs with MPIZIP_FAULT set
//   tma_fault agree  every rank's must succeed with the exact sum: the ranks' settings differ, so
//                    MPIZip is off for MPI_COMM_WORLD (checked through MPIZip_Comm_protocol)
//
// Inputs are integers in floats, so the sum is exact in any order. Rank 0 prints one summary line
// ("tma_fault: ..."). Exits 77 without a GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int rank = 0;

void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(err));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

float value(long i, int r) { return static_cast<float>((i * 7 + r * 13L) % 1001 - 500); }

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "fail" && mode != "agree") {
    std::fprintf(stderr, "usage: tma_fault fail|agree\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto protocol = reinterpret_cast<int (*)(MPI_Comm)>(dlsym(RTLD_DEFAULT, "MPIZip_Comm_protocol"));
  const int on = protocol != nullptr ? protocol(MPI_COMM_WORLD) : 0;

  const long n = 1L << 20;  // 4 MiB: large enough to share through CUDA IPC without staging
  std::vector<float> in(n), want(n, 0.0f), got(n);
  for (long i = 0; i < n; ++i) {
    in[i] = value(i, rank);
    for (int r = 0; r < size; ++r) want[i] += value(i, r);
  }
  float *din = nullptr, *dout = nullptr;
  cuda_check(cudaMalloc(&din, n * sizeof(float)), "cudaMalloc");
  cuda_check(cudaMalloc(&dout, n * sizeof(float)), "cudaMalloc");
  cuda_check(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");

  int failed = 0, wrong = 0;
  double longest = 0;
  for (int call = 0; call < 3; ++call) {  // the group stays usable: every call ends the same way
    cuda_check(cudaMemset(dout, 0, n * sizeof(float)), "cudaMemset");
    const double t0 = MPI_Wtime();
    const int rc = MPI_Allreduce(din, dout, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const double t = MPI_Wtime() - t0;
    if (t > longest) longest = t;
    if (rc != MPI_SUCCESS) {
      ++failed;
      continue;
    }
    cuda_check(cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (std::memcmp(got.data(), want.data(), n * sizeof(float)) != 0) ++wrong;
  }
  // Host integers: the MPI library's own allreduce, unaffected.
  int facts[2] = {failed == 3 ? 1 : 0, failed == 0 && wrong == 0 ? 1 : 0}, all[2] = {0, 0};
  MPI_Allreduce(facts, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  double slowest = 0;
  MPI_Allreduce(&longest, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  int status = 0;
  if (rank == 0) {
    std::printf("tma_fault: %s: %d of %d ranks failed every call, %d of %d exact; protocol on "
                "MPI_COMM_WORLD %d; slowest call %.2f s\n",
                mode.c_str(), all[0], size, all[1], size, on, slowest);
    if (mode == "fail" && all[0] != size) status = 1;
    if (mode == "agree" && (all[1] != size || on != 0)) status = 1;
    std::printf("tma_fault: %s\n", status == 0 ? "ok" : "FAILED");
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  cudaFree(din);
  cudaFree(dout);
  MPI_Finalize();
  return status;
}
