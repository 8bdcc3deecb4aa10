// The copy kernel of osu-bench/ipc_latency.cc (compiled by nvcc, which does not see MPI's headers).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

// Copies n bytes with 16-byte words where aligned; the last block to finish writes `seq` to
// `flag` (mapped host memory) once every block's stores are visible system-wide.
__global__ void copy_kernel(unsigned char* dst, const unsigned char* src, size_t n,
                            volatile uint64_t* flag, uint64_t seq, unsigned* arrived) {
  const size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  const size_t words = n / 16;
  for (size_t i = tid; i < words; i += stride)
    reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
  for (size_t i = words * 16 + tid; i < n; i += stride) dst[i] = src[i];
  if (flag == nullptr) return;
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned last = atomicAdd(arrived, 1u);
    if (last == gridDim.x - 1) {
      *arrived = 0;
      __threadfence_system();
      *flag = seq;
    }
  }
}

}  // namespace

// Launches copy_kernel on `s` with a grid fitted to n.
extern "C" cudaError_t ipc_latency_copy(void* dst, const void* src, size_t n, uint64_t* flag,
                                        uint64_t seq, unsigned* arrived, cudaStream_t s) {
  const unsigned blocks =
      static_cast<unsigned>(std::min<size_t>(64, std::max<size_t>(1, n / (256 * 16))));
  copy_kernel<<<blocks, 256, 0, s>>>(static_cast<unsigned char*>(dst),
                                     static_cast<const unsigned char*>(src), n, flag, seq, arrived);
  return cudaGetLastError();
}
