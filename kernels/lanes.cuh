// Groups of 32 lanes, the unit of the codec's kernels (the format interleaves 32 rANS coders).
// On CUDA a group is a warp; on HIP a 64-wide wavefront holds two groups that work independently,
// so every primitive here acts on the caller's own 32-lane half and never crosses into the other.
#pragma once

#include <cstdint>

#include "src/platform/gpu.h"

namespace mpizip::kernels::lanes {

inline constexpr int kLanes = 32;
// Groups per hardware warp: 1 on CUDA, 2 on a 64-wide HIP wavefront.
inline constexpr int kGroupsPerWarp = MPIZIP_WARP_SIZE / kLanes;

__device__ __forceinline__ int lane() { return static_cast<int>(threadIdx.x) & (kLanes - 1); }
// Index of the caller's group in its CTA.
__device__ __forceinline__ int group() { return static_cast<int>(threadIdx.x) / kLanes; }
__device__ __forceinline__ uint32_t mask_lt() { return (1u << lane()) - 1u; }

#if defined(__HIPCC__) || defined(MPIZIP_HIP)
__device__ __forceinline__ uint32_t ballot(bool p) {
  const uint64_t b = __ballot(p);
  return static_cast<uint32_t>(b >> (threadIdx.x & 32));
}
template <typename T>
__device__ __forceinline__ T shfl(T v, int src) { return __shfl(v, src, kLanes); }
template <typename T>
__device__ __forceinline__ T shfl_up(T v, int d) { return __shfl_up(v, d, kLanes); }
template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int m) { return __shfl_xor(v, m, kLanes); }
// A wavefront executes in lock step; shared-memory ordering inside it needs only a fence.
__device__ __forceinline__ void sync() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"); }
#else
__device__ __forceinline__ uint32_t ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
template <typename T>
__device__ __forceinline__ T shfl(T v, int src) { return __shfl_sync(0xffffffffu, v, src); }
template <typename T>
__device__ __forceinline__ T shfl_up(T v, int d) { return __shfl_up_sync(0xffffffffu, v, d); }
template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
__device__ __forceinline__ void sync() { __syncwarp(); }
#endif

__device__ __forceinline__ int popc(uint32_t m) { return __popc(m); }

template <typename T>
__device__ __forceinline__ T sum(T v) {
#pragma unroll
  for (int m = kLanes / 2; m; m >>= 1) v += shfl_xor(v, m);
  return v;
}
template <typename T>
__device__ __forceinline__ T max(T v) {
#pragma unroll
  for (int m = kLanes / 2; m; m >>= 1) {
    T o = shfl_xor(v, m);
    v = o > v ? o : v;
  }
  return v;
}
// Inclusive prefix sum over the lanes.
template <typename T>
__device__ __forceinline__ T scan(T v) {
#pragma unroll
  for (int d = 1; d < kLanes; d <<= 1) {
    T o = shfl_up(v, d);
    if (lane() >= d) v += o;
  }
  return v;
}

}  // namespace mpizip::kernels::lanes
