// Little-endian loads and stores of 1 to 16 bytes at byte addresses, for the codec's kernels.
// kAligned: the caller guarantees the address is a multiple of the access size (buffers whose base
// is 16-byte aligned, at the format's aligned offsets), so one vector access does; otherwise the
// access goes byte by byte, which is correct at any address.
#pragma once

#include <cstdint>

#include "src/platform/gpu.h"

namespace mpizip::kernels::bytes {

template <bool kAligned>
__device__ __forceinline__ uint32_t ld16(const uint8_t* p) {
  if (kAligned) return *reinterpret_cast<const uint16_t*>(p);
  return p[0] | (uint32_t{p[1]} << 8);
}
template <bool kAligned>
__device__ __forceinline__ uint32_t ld32(const uint8_t* p) {
  if (kAligned) return *reinterpret_cast<const uint32_t*>(p);
  return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
template <bool kAligned>
__device__ __forceinline__ uint64_t ld64(const uint8_t* p) {
  if (kAligned) return *reinterpret_cast<const uint64_t*>(p);
  return ld32<false>(p) | (uint64_t{ld32<false>(p + 4)} << 32);
}
template <bool kAligned>
__device__ __forceinline__ void st16(uint8_t* p, uint32_t v) {
  if (kAligned) {
    *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(v);
  } else {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
  }
}
template <bool kAligned>
__device__ __forceinline__ void st32(uint8_t* p, uint32_t v) {
  if (kAligned) {
    *reinterpret_cast<uint32_t*>(p) = v;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}
template <bool kAligned>
__device__ __forceinline__ void st64(uint8_t* p, uint64_t v) {
  if (kAligned) {
    *reinterpret_cast<uint64_t*>(p) = v;
  } else {
    st32<false>(p, static_cast<uint32_t>(v));
    st32<false>(p + 4, static_cast<uint32_t>(v >> 32));
  }
}

// n (0..16) bytes of a 16-byte chunk, the rest zero: the tail of a buffer. Unrolled with
// constant indices, so the words stay in registers.
__device__ __forceinline__ void ld_partial(const uint8_t* p, int n, uint32_t (&w)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    if (i < n) w[i / 4] |= uint32_t{p[i]} << (8 * (i % 4));
}
template <int kWords>
__device__ __forceinline__ void st_partial(uint8_t* p, int n, const uint32_t (&w)[kWords]) {
#pragma unroll
  for (int i = 0; i < 4 * kWords; ++i)
    if (i < n) p[i] = static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4)));
}

// A chunk of 16 bytes: one 16-byte access when aligned.
template <bool kAligned>
__device__ __forceinline__ void ld128(const uint8_t* p, uint32_t (&w)[4]) {
  if (kAligned) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = ld32<false>(p + 4 * i);
  }
}
template <bool kAligned>
__device__ __forceinline__ void st128(uint8_t* p, const uint32_t (&w)[4]) {
  if (kAligned) {
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) st32<false>(p + 4 * i, w[i]);
  }
}

// n (2, 4, 6, 8 or 16) bytes from/to words, at an address aligned to the access unit when kAligned
// (6 bytes: a 2-byte unit).
template <bool kAligned>
__device__ __forceinline__ void ld_n(const uint8_t* p, int n, uint32_t* w) {
  if (n == 8) {
    if (kAligned) {
      const uint2 v = *reinterpret_cast<const uint2*>(p);
      w[0] = v.x, w[1] = v.y;
    } else {
      w[0] = ld32<false>(p), w[1] = ld32<false>(p + 4);
    }
  } else if (n == 4) {
    w[0] = ld32<kAligned>(p);
  } else if (n == 2) {
    w[0] = ld16<kAligned>(p);
  } else if (n == 6) {
    w[0] = ld16<kAligned>(p) | (ld16<kAligned>(p + 2) << 16);
    w[1] = ld16<kAligned>(p + 4);
  } else {
    uint32_t v[4];
    ld128<kAligned>(p, v);
    w[0] = v[0], w[1] = v[1], w[2] = v[2], w[3] = v[3];
  }
}
template <bool kAligned>
__device__ __forceinline__ void st_n(uint8_t* p, int n, const uint32_t* w) {
  if (n == 8) {
    if (kAligned) {
      *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else {
      st32<false>(p, w[0]), st32<false>(p + 4, w[1]);
    }
  } else if (n == 4) {
    st32<kAligned>(p, w[0]);
  } else if (n == 2) {
    st16<kAligned>(p, w[0]);
  } else if (n == 6) {
    st16<kAligned>(p, w[0]), st16<kAligned>(p + 2, w[0] >> 16), st16<kAligned>(p + 4, w[1]);
  } else {
    const uint32_t v[4] = {w[0], w[1], w[2], w[3]};
    st128<kAligned>(p, v);
  }
}

// A hint: bring [p, p + n) of global memory into L2, without waiting and without registers (one
// bulk prefetch on Hopper; nothing elsewhere). p and n must be multiples of 16.
__device__ __forceinline__ void prefetch_l2(const uint8_t* p, uint32_t n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIPCC__)
  if (n) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(n) : "memory");
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace mpizip::kernels::bytes
