// gpu_sharing: what it costs two MPI ranks to share one GPU, the reason MPIZip's one-GPU benchmarks
// run under MPS (docs/DESIGN.md, "Measuring"). Three figures, printed by rank 0:
//   - one kernel of about 10 us on a full grid, launched and waited for, alone (the unit);
//   - a ping-pong in which the ranks take turns to run that kernel (two kernels per round trip):
//     time-sliced contexts add a context switch to each turn;
//   - 2000 small kernels (8 CTAs) streamed by one rank, then by both at once: time-slicing runs the
//     two streams one after the other, MPS side by side.
// Medians of 200-300 repetitions. Run it plain and under osu-bench/with-mps to compare.
//
// usage: mpirun -np 2 gpu_sharing
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "osu-bench/common/bench_util.h"

// osu-bench/gpu_sharing_spin.cu: a kernel that spins `cycles` SM cycles on `ctas` CTAs of 128 threads.
extern "C" cudaError_t gpu_sharing_spin(int ctas, long long cycles, int* sink, cudaStream_t s);

namespace {

using osub::bench::median;

bool check(cudaError_t e, const char* what, int rank) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "gpu_sharing: rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::fprintf(stderr, "gpu_sharing: run with 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  int* sink = nullptr;
  cudaStream_t s;
  int sms = 0;
  int ok = check(cudaMalloc(&sink, sizeof(int)), "cudaMalloc", rank) &&
           check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", rank) &&
           check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attribute", rank);
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    MPI_Finalize();
    return 77;
  }
  const long long cycles = 20000;  // about 10 us at 2 GHz
  for (int i = 0; i < 100; ++i) gpu_sharing_spin(sms, cycles, sink, s);
  cudaStreamSynchronize(s);

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    std::vector<double> t;
    for (int i = 0; i < 200; ++i) {
      const double t0 = MPI_Wtime();
      gpu_sharing_spin(sms, cycles, sink, s);
      cudaStreamSynchronize(s);
      t.push_back(MPI_Wtime() - t0);
    }
    std::printf("# kernel and wait, one rank alone: %.1f us\n", median(t) * 1e6);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<double> rt;
  int token = 0;
  for (int i = 0; i < 300; ++i) {
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      gpu_sharing_spin(sms, cycles, sink, s);
      cudaStreamSynchronize(s);
      MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      gpu_sharing_spin(sms, cycles, sink, s);
      cudaStreamSynchronize(s);
      MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    rt.push_back(MPI_Wtime() - t0);
  }
  if (rank == 0) {
    std::printf("# ranks taking turns, one kernel each: %.1f us per round trip\n", median(rt) * 1e6);
  }
  for (int both = 0; both < 2; ++both) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (both || rank == 0) {
      for (int i = 0; i < 2000; ++i) gpu_sharing_spin(8, cycles, sink, s);
      cudaStreamSynchronize(s);
    }
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf("# 2000 kernels of 8 CTAs, %s: %.2f ms\n", both ? "both ranks at once" : "one rank",
                  slowest * 1e3);
    }
  }
  const bool launched = check(cudaGetLastError(), "kernel launch", rank);
  cudaFree(sink);
  cudaStreamDestroy(s);
  MPI_Finalize();
  return launched ? 0 : 1;
}
