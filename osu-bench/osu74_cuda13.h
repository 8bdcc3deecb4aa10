/* Builds OSU Micro-Benchmarks 7.4 against CUDA 13, whose cudaMemPrefetchAsync takes a location and
 * flags where 7.4 passes a device number (the CUDA 12 form): osu-bench/osu74.sh force-includes this
 * header into OSU's C files. It changes nothing else. */
#pragma once
#include <cuda_runtime.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
static inline cudaError_t osu74_prefetch(const void* p, size_t n, int device, cudaStream_t s) {
  struct cudaMemLocation where;
  where.type = cudaMemLocationTypeDevice;
  where.id = device;
  return cudaMemPrefetchAsync(p, n, where, 0, s);
}
#define cudaMemPrefetchAsync(p, n, device, s) osu74_prefetch((p), (n), (device), (s))
#endif
