// The GPU codec's fast mode: kernel instantiations (kernels/fast_gpu.cuh) and their launchers
// (kernels/fast_gpu.h), reached from kernels/codec_gpu.cu.
#include "kernels/fast_gpu.h"

#include "kernels/fast_gpu.cuh"
#include "kernels/launch.h"
#include "src/platform/gpu.h"

namespace mpizip::kernels::gpu::fast {

using format::DType;
using namespace launch;
namespace dev = mpizip::kernels::fast;

namespace {

// Up to 8 CTAs of 256 threads fill a multiprocessor's 2048 threads. The encoder keeps 64 registers
// a thread (4 CTAs: its next chunk's input is already in flight, so fewer CTAs keep the memory
// busy); the decoder of one plane on aligned buffers fits 48 (5 CTAs) without spilling, the others
// keep 64.
template <DType T, bool kAligned>
__global__ void __launch_bounds__(dev::kThreads, 4) encode_kernel(const dev::EncParams p) {
  __shared__ dev::EncSmem<T> sm;
  dev::encode<T, kAligned>(p, sm);
}

template <DType T, bool kAligned>
__global__ void __launch_bounds__(dev::kThreads, kAligned && dev::Shape<T>::kPlanes == 1 ? 5 : 4) decode_kernel(const dev::DecParams p) {
  __shared__ dev::DecSmem<T> sm;
  dev::decode<T, kAligned>(p, sm);
}

}  // namespace

Status compress(DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity, void* state,
                uint64_t* entries, uint64_t entries_cap, DeviceResult* result, bool checksum, int max_ctas,
                void* stream) {
  if ((!src && count) || !dst || !state || !entries || !result || !format::dtype_valid(static_cast<uint8_t>(t)) ||
      count > (uint64_t{1} << 58) || max_ctas < 0)
    return Status::kInvalidArgument;
  const uint64_t chunks = format::fast_chunks(t, count) / format::planes(t);
  if (chunks >= (uint64_t{1} << 31) || chunks > entries_cap) return Status::kInvalidArgument;
  dev::EncParams p{static_cast<const uint8_t*>(src), count, static_cast<uint8_t*>(dst), dst_capacity,
                   static_cast<scan::State*>(state), entries, result, checksum ? 1 : 0};
  const bool aligned = aligned16(src) && aligned16(dst);
  return dispatch(t, [&](auto tag) -> Status {
    constexpr DType T = decltype(tag)::value;
    const void* k = aligned ? (const void*)encode_kernel<T, true> : (const void*)encode_kernel<T, false>;
    int resident = 0;
    MPIZIP_CHECK(resident_ctas(k, dev::kThreads, 0, 0, &resident));
    const int grid = grid_for(chunks, resident, max_ctas);
    void* args[] = {&p};
    MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(grid), dim3(dev::kThreads), args, 0, static_cast<gpuStream_t>(stream)));
    return Status::kOk;
  });
}

Status decompress(DType t, const void* src, uint64_t src_bytes, void* dst, uint64_t dst_capacity, void* state,
                  DeviceResult* result, int max_ctas, void* stream) {
  if (!src || (!dst && dst_capacity) || !state || !result || !format::dtype_valid(static_cast<uint8_t>(t)) ||
      max_ctas < 0)
    return Status::kInvalidArgument;
  dev::DecParams p{static_cast<const uint8_t*>(src), src_bytes, static_cast<uint8_t*>(dst), dst_capacity,
                   static_cast<scan::State*>(state), result};
  const bool aligned = aligned16(src) && aligned16(dst);
  // The stream's count is unknown to the host: as many chunks as the destination holds.
  const uint64_t chunks = format::blocks_per_plane(t, dst_capacity / format::elem_bytes(t), format::kFastLog2Chunk);
  return dispatch(t, [&](auto tag) -> Status {
    constexpr DType T = decltype(tag)::value;
    const void* k = aligned ? (const void*)decode_kernel<T, true> : (const void*)decode_kernel<T, false>;
    int resident = 0;
    MPIZIP_CHECK(resident_ctas(k, dev::kThreads, 0, 0, &resident));
    const int grid = grid_for(chunks, resident, max_ctas);
    void* args[] = {&p};
    MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(grid), dim3(dev::kThreads), args, 0, static_cast<gpuStream_t>(stream)));
    return Status::kOk;
  });
}

}  // namespace mpizip::kernels::gpu::fast
