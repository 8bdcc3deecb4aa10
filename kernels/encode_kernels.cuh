// The encoder's kernels: one instantiation family (encode::Variant, kernels/ans_encode.cuh) per
// translation unit (kernels/encode_wide.cu, encode_mid.cu, encode_narrow.cu, encode_stream.cu), so
// that they compile side by side; codec_gpu.cu's launcher picks among them (launch::encode_kernel).
// Each of those files includes this header and instantiates its variant's encode_kernel once.
#pragma once

#include "kernels/ans_encode.cuh"
#include "kernels/launch.h"

namespace mpizip::kernels::gpu::launch {

// Encoder CTAs a multiprocessor should be able to hold (a register cap): 1 leaves the compiler free.
#ifndef MPIZIP_ENC_MIN_CTAS
#define MPIZIP_ENC_MIN_CTAS 1
#endif

// Or a register cap (CUDA 12.4 and newer). A CTA of one warp lives on one of a multiprocessor's four
// sub-partitions, whose 16 K registers hold floor(16384 / (32 x cap)) such warps. Three
// shared-memory instantiations: the wide one takes 184 (2 a sub-partition, 8 groups a
// multiprocessor; the split of whole blocks, encode::BlockEncoder::split_full, would take 190
// uncapped), the middle one 168 (3: 12 groups, 11 at 16384-symbol blocks, where shared memory is the
// limit) and the narrow one 128 (4: 16 groups at blocks of at most 4096 symbols). The fourth, the
// streamed one, holds no block in shared memory: 20 groups (its bounds are in encode_stream.cu).
// The launcher takes the one whose groups take the launch in the fewest waves, the wider of two
// that tie: where the extra groups save a wave the tighter cap is 8-22% faster, and where they do
// not it only costs (kernels/NOTES-codec-gpu.md, v9, v10 and v13). 0: no cap.
#ifndef MPIZIP_ENC_MAXNREG
#define MPIZIP_ENC_MAXNREG 184
#endif
#ifndef MPIZIP_ENC_MID_MAXNREG
#define MPIZIP_ENC_MID_MAXNREG 168
#endif
#ifndef MPIZIP_ENC_NARROW_MAXNREG
#define MPIZIP_ENC_NARROW_MAXNREG 128
#endif
#if MPIZIP_ENC_MAXNREG && MPIZIP_ENC_NARROW_MAXNREG && defined(__CUDACC__) && !defined(__HIPCC__) && \
    !defined(MPIZIP_HIP) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define MPIZIP_ENC_CAPS 1
#else
// No register caps (HIP, older CUDA): the three shared-memory variants would be the same kernel, so
// the wide one serves all three (encode_mid.cu and encode_narrow.cu return it).
#define MPIZIP_ENC_CAPS 0
#endif

// The register cap of a shared-memory variant.
constexpr int enc_maxnreg(int variant) {
  return variant == encode::kNarrow ? MPIZIP_ENC_NARROW_MAXNREG
         : variant == encode::kMid  ? MPIZIP_ENC_MID_MAXNREG
                                    : MPIZIP_ENC_MAXNREG;
}

#if MPIZIP_ENC_CAPS
#define MPIZIP_ENC_BOUNDS(variant) __maxnreg__(enc_maxnreg(variant))
#else
#define MPIZIP_ENC_BOUNDS(variant) __launch_bounds__(kEncThreads, MPIZIP_ENC_MIN_CTAS)
#endif

template <int kVariant, DType T, bool kFused, bool kAligned>
__global__ void MPIZIP_ENC_BOUNDS(kVariant) encode_smem_kernel(const MPIZIP_GRID_CONSTANT encode::Params p) {
  extern __shared__ uint4 smem[];
  encode::run<T, kFused, kAligned, kVariant>(p, reinterpret_cast<uint8_t*>(smem));
}

// One variant's kernel for a launch's form: k(type, fused, aligned) names it, from
// std::integral_constant tags (the four forms of each type: fused or not, aligned or not).
template <typename K>
const void* pick_kernel(DType t, bool fused, bool aligned, K k) {
  const void* out = nullptr;
  (void)dispatch(t, [&](auto type) -> Status {
    const auto form = [&](auto f) {
      return aligned ? k(type, f, std::true_type{}) : k(type, f, std::false_type{});
    };
    out = fused ? form(std::true_type{}) : form(std::false_type{});
    return Status::kOk;
  });
  return out;
}

// A shared-memory variant's kernel (encode_wide.cu, encode_mid.cu, encode_narrow.cu instantiate it).
template <int kVariant>
const void* pick_smem_kernel(DType t, bool fused, bool aligned) {
  return pick_kernel(t, fused, aligned, [](auto type, auto f, auto a) {
    return reinterpret_cast<const void*>(
        encode_smem_kernel<kVariant, decltype(type)::value, decltype(f)::value, decltype(a)::value>);
  });
}

}  // namespace mpizip::kernels::gpu::launch
