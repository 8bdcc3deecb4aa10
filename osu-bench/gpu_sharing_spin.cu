// The kernel of osu-bench/gpu_sharing.cc (compiled by nvcc, which does not see MPI's headers).
#include <cuda_runtime.h>

namespace {

__global__ void spin(long long cycles, int* sink) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(sink, 1);
}

}  // namespace

extern "C" cudaError_t gpu_sharing_spin(int ctas, long long cycles, int* sink, cudaStream_t s) {
  spin<<<ctas, 128, 0, s>>>(cycles, sink);
  return cudaGetLastError();
}
