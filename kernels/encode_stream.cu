// The streamed encoder's kernels (encode::kStream, kernels/ans_encode.cuh), in a translation unit of
// their own (kernels/encode_kernels.cuh).
#include "kernels/encode_kernels.cuh"

namespace mpizip::kernels::gpu::launch {

namespace {

// Its shared memory is ~2.5 KiB a group, so registers set its residency. 20 CTAs of one warp a
// multiprocessor leave 96 registers a lane; 24 (80 registers) spill 60-110 bytes a lane, 32 (64)
// 200-250 (ptxas, every type). CUDA only; on HIP the compiler is left free, as for the others.
#ifndef MPIZIP_ENC_STREAM_MIN_CTAS
#define MPIZIP_ENC_STREAM_MIN_CTAS 20
#endif
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
#define MPIZIP_ENC_STREAM_BOUNDS __launch_bounds__(kEncThreads, 1)
#else
#define MPIZIP_ENC_STREAM_BOUNDS __launch_bounds__(kEncThreads, MPIZIP_ENC_STREAM_MIN_CTAS)
#endif

template <DType T, bool kFused, bool kAligned>
__global__ void MPIZIP_ENC_STREAM_BOUNDS encode_kernel_stream(const MPIZIP_GRID_CONSTANT encode::Params p) {
  extern __shared__ uint4 smem[];
  encode::run<T, kFused, kAligned, encode::kStream>(p, reinterpret_cast<uint8_t*>(smem));
}

}  // namespace

const void* encode_stream_kernel(DType t, bool fused, bool aligned) {
  return pick_kernel(t, fused, aligned, [](auto type, auto f, auto a) {
    return reinterpret_cast<const void*>(
        encode_kernel_stream<decltype(type)::value, decltype(f)::value, decltype(a)::value>);
  });
}

}  // namespace mpizip::kernels::gpu::launch
