// Host-side helpers of the GPU codec's launchers (kernels/codec_gpu.cu, kernels/decode_fold.cu):
// the codec's switch from a runtime element type to a kernel instantiation, and launch shapes.
// (The reductions' one switch over element type x op is reduce::dispatch, kernels/reduce.h.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "kernels/format.h"
#include "src/platform/gpu.h"
#include "src/platform/status.h"

namespace mpizip::kernels::gpu::launch {

using format::DType;

// Calls f with std::integral_constant<DType, t>: the codec's switch over element types.
template <typename F>
inline Status dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kBf16: return f(std::integral_constant<DType, DType::kBf16>{});
    case DType::kFp16: return f(std::integral_constant<DType, DType::kFp16>{});
    case DType::kFp32: return f(std::integral_constant<DType, DType::kFp32>{});
    case DType::kFp64: return f(std::integral_constant<DType, DType::kFp64>{});
    case DType::kE4m3: return f(std::integral_constant<DType, DType::kE4m3>{});
    case DType::kE5m2: return f(std::integral_constant<DType, DType::kE5m2>{});
  }
  return Status::kInvalidArgument;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Encoder CTAs: one 32-lane group each (two on a 64-wide wavefront). A shared-memory group needs up
// to 67.5 KiB (kernels/ans_encode.cuh), so CTAs of one group pack a multiprocessor best.
inline constexpr int kEncThreads = MPIZIP_WARP_SIZE;

// The encoder's kernel of each variant (encode::Variant) for one form of launch: each variant's
// kernels compile in a translation unit of their own (kernels/encode_kernels.cuh), side by side.
const void* encode_wide_kernel(DType t, bool fused, bool aligned);    // kernels/encode_wide.cu
const void* encode_mid_kernel(DType t, bool fused, bool aligned);     // kernels/encode_mid.cu
const void* encode_narrow_kernel(DType t, bool fused, bool aligned);  // kernels/encode_narrow.cu
const void* encode_stream_kernel(DType t, bool fused, bool aligned);  // kernels/encode_stream.cu

// CTAs of `kernel` that fit on the whole GPU at once, for `smem` bytes of dynamic shared memory.
// Probed once per kernel, device and size: the hot path then costs a map lookup.
// The kernel's dynamic shared-memory limit is raised once to `smem_max`, the most any of its
// launches uses, so that a smaller launch never lowers it under a later larger one.
inline Status resident_ctas(const void* kernel, int threads, uint32_t smem, uint32_t smem_max, int* out) {
  static std::mutex mu;
  static std::map<std::pair<std::pair<const void*, int>, uint32_t>, int> cache;
  int dev = 0;
  MPIZIP_GPU_CHECK(gpuGetDevice(&dev));
  const auto key = std::make_pair(std::make_pair(kernel, dev), smem);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) {
    *out = it->second;
    return Status::kOk;
  }
  int sms = 0, per_sm = 0;
  MPIZIP_GPU_CHECK(gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, dev));
  MPIZIP_GPU_CHECK(gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_max)));
  MPIZIP_GPU_CHECK(gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  *out = cache[key] = std::max(1, sms * per_sm);
  return Status::kOk;
}

inline int grid_for(uint64_t work_ctas, int resident, int max_ctas) {
  uint64_t g = std::min<uint64_t>(std::max<uint64_t>(work_ctas, 1), static_cast<uint64_t>(resident));
  if (max_ctas > 0) g = std::min<uint64_t>(g, static_cast<uint64_t>(max_ctas));
  return static_cast<int>(g);
}

}  // namespace mpizip::kernels::gpu::launch
