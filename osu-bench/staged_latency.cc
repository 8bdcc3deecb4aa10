// staged_latency: the references for the latency of small device-buffer messages between two ranks
// of one node (osu-bench/results/README.md, "No harm"). For each size, printed by rank 0:
//   - memcpy_rtt: one cudaMemcpy device to pinned host and one back, in one process (medians);
//   - staged: the one-way latency of a ping-pong that stages by hand, as an application does on
//     an MPI library that cannot read device memory: cudaMemcpy to pinned host memory, MPI_Send of
//     MPI_CHAR, MPI_Recv, cudaMemcpy to the device; half the median round trip.
// Without MPS the two ranks' copies run in time-sliced contexts; run it plain and under
// osu-bench/with-mps to compare.
//
// usage: mpirun -np 2 staged_latency [-m MIN:MAX] [-i ITERS]
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "osu-bench/common/bench_util.h"

namespace {

using osub::bench::median;

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t lo = 1, hi = 65536;
  int iters = 1000;
  if (!osub::bench::parse_range_iters(argc, argv, &lo, &hi, &iters) || size != 2) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np 2 staged_latency [-m MIN:MAX] [-i ITERS]\n");
    MPI_Finalize();
    return 2;
  }
  void* dev = nullptr;
  void* host = nullptr;
  if (cudaMalloc(&dev, hi) != cudaSuccess || cudaMallocHost(&host, hi) != cudaSuccess ||
      cudaMemset(dev, rank + 1, hi) != cudaSuccess) {
    std::fprintf(stderr, "staged_latency: rank %d: no GPU memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) std::printf("# Size   memcpy_rtt_us   staged_oneway_us\n");
  const int warmup = iters / 10;
  for (size_t n = lo; n <= hi; n *= 2) {
    std::vector<double> rtt;
    if (rank == 0) {
      for (int i = 0; i < warmup + iters; ++i) {
        const double t0 = MPI_Wtime();
        cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
        if (i >= warmup) rtt.push_back((MPI_Wtime() - t0) * 1e6);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<double> pp;
    const int c = static_cast<int>(n);
    for (int i = 0; i < warmup + iters; ++i) {
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
        MPI_Send(host, c, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(host, c, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
      } else {
        MPI_Recv(host, c, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
        cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
        MPI_Send(host, c, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      }
      if (i >= warmup) pp.push_back((MPI_Wtime() - t0) * 1e6 / 2);
    }
    if (rank == 0) std::printf("%-8zu %12.2f %16.2f\n", n, median(rtt), median(pp));
    std::fflush(stdout);
  }
  cudaFree(dev);
  cudaFreeHost(host);
  MPI_Finalize();
  return 0;
}
