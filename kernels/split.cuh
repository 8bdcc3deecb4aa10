// Splitting elements into raw bits and symbols, and merging them back (docs/FORMAT.md, "Splitting
// an element"), 16 input bytes (one chunk) at a time, in registers. Each type's Chunk says how many
// elements, symbols per plane and raw bytes per sub-plane a chunk holds; split() and merge() are
// exact inverses. Bytes are packed four to a 32-bit word, little-endian, so a chunk's symbols and
// raw bytes go to memory with one vector access each.
#pragma once

#include <cstdint>

#include "kernels/bytes.cuh"
#include "kernels/format.h"
#include "src/platform/gpu.h"

namespace mpizip::kernels::split {

using format::DType;

// Per-byte helpers on four bytes held in one word.
__device__ __forceinline__ uint32_t perm(uint32_t a, uint32_t b, uint32_t sel) { return __byte_perm(a, b, sel); }

template <DType T>
struct Chunk;

// bf16 and fp16 share the split: symbol (v >> 7) & 0xFF, raw ((v >> 8) & 0x80) | (v & 0x7F).
// Bytes of four elements are gathered low/high first, then every step is a bytewise mask.
struct Chunk16Bit {
  static constexpr int kElems = 8, kSyms = 8, kPlanes = 1;
  static constexpr int kRaw0 = 8, kRaw1 = 0;
  __device__ static void split(const uint32_t (&in)[4], uint32_t (&sym)[2][4], uint32_t (&raw)[2][2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t lo = perm(in[2 * h], in[2 * h + 1], 0x6420), hi = perm(in[2 * h], in[2 * h + 1], 0x7531);
      raw[0][h] = (lo & 0x7F7F7F7Fu) | (hi & 0x80808080u);
      sym[0][h] = ((hi << 1) & 0xFEFEFEFEu) | ((lo >> 7) & 0x01010101u);
    }
  }
  __device__ static void merge(const uint32_t (&sym)[2][4], const uint32_t (&raw)[2][2], uint32_t (&out)[4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t lo = (raw[0][h] & 0x7F7F7F7Fu) | ((sym[0][h] << 7) & 0x80808080u);
      uint32_t hi = (raw[0][h] & 0x80808080u) | ((sym[0][h] >> 1) & 0x7F7F7F7Fu);
      out[2 * h] = perm(lo, hi, 0x5140);
      out[2 * h + 1] = perm(lo, hi, 0x7362);
    }
  }
};
template <> struct Chunk<DType::kBf16> : Chunk16Bit {};
template <> struct Chunk<DType::kFp16> : Chunk16Bit {};

template <>
struct Chunk<DType::kFp32> {
  static constexpr int kElems = 4, kSyms = 4, kPlanes = 1;
  static constexpr int kRaw0 = 8, kRaw1 = 4;
  __device__ static void split(const uint32_t (&in)[4], uint32_t (&sym)[2][4], uint32_t (&raw)[2][2]) {
    uint32_t t[4], r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      t[i] = in[i] >> 23;  // exponent in the low byte
      uint32_t u = in[i] >> 16;
      r[i] = (u & 0x7Fu) | ((u >> 8) & 0x80u);
    }
    sym[0][0] = perm(perm(t[0], t[1], 0x0040), perm(t[2], t[3], 0x0040), 0x5410);
    raw[0][0] = perm(in[0], in[1], 0x5410);
    raw[0][1] = perm(in[2], in[3], 0x5410);
    raw[1][0] = perm(perm(r[0], r[1], 0x0040), perm(r[2], r[3], 0x0040), 0x5410);
  }
  __device__ static void merge(const uint32_t (&sym)[2][4], const uint32_t (&raw)[2][2], uint32_t (&out)[4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t s = (sym[0][0] >> (8 * i)) & 0xFFu, r = (raw[1][0] >> (8 * i)) & 0xFFu;
      uint32_t low = (raw[0][i / 2] >> (16 * (i % 2))) & 0xFFFFu;
      out[i] = (s << 23) | ((r & 0x80u) << 24) | ((r & 0x7Fu) << 16) | low;
    }
  }
};

// fp64: two symbol planes, the high 8 exponent bits and the next 8 bits below them.
template <>
struct Chunk<DType::kFp64> {
  static constexpr int kElems = 2, kSyms = 2, kPlanes = 2;
  static constexpr int kRaw0 = 8, kRaw1 = 4;
  __device__ static void split(const uint32_t (&in)[4], uint32_t (&sym)[2][4], uint32_t (&raw)[2][2]) {
    const uint32_t h0 = in[1], h1 = in[3];
    sym[0][0] = ((h0 >> 23) & 0xFFu) | (((h1 >> 23) & 0xFFu) << 8);
    sym[1][0] = ((h0 >> 15) & 0xFFu) | (((h1 >> 15) & 0xFFu) << 8);
    raw[0][0] = in[0];
    raw[0][1] = in[2];
    raw[1][0] = (((h0 >> 16) & 0x8000u) | (h0 & 0x7FFFu)) | ((((h1 >> 16) & 0x8000u) | (h1 & 0x7FFFu)) << 16);
  }
  __device__ static void merge(const uint32_t (&sym)[2][4], const uint32_t (&raw)[2][2], uint32_t (&out)[4]) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      uint32_t s0 = (sym[0][0] >> (8 * i)) & 0xFFu, s1 = (sym[1][0] >> (8 * i)) & 0xFFu;
      uint32_t r1 = (raw[1][0] >> (16 * i)) & 0xFFFFu;
      out[2 * i] = raw[0][i];
      out[2 * i + 1] = (s0 << 23) | (s1 << 15) | ((r1 & 0x8000u) << 16) | (r1 & 0x7FFFu);
    }
  }
};

// fp8 e4m3: one symbol per pair (a, b) = both 4-bit exponents; raw = both signs and mantissas.
template <>
struct Chunk<DType::kE4m3> {
  static constexpr int kElems = 16, kSyms = 8, kPlanes = 1;
  static constexpr int kRaw0 = 8, kRaw1 = 0;
  __device__ static void split(const uint32_t (&in)[4], uint32_t (&sym)[2][4], uint32_t (&raw)[2][2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t a = perm(in[2 * h], in[2 * h + 1], 0x6420), b = perm(in[2 * h], in[2 * h + 1], 0x7531);
      sym[0][h] = ((a << 1) & 0xF0F0F0F0u) | ((b >> 3) & 0x0F0F0F0Fu);
      raw[0][h] = (a & 0x80808080u) | ((a << 4) & 0x70707070u) | ((b >> 4) & 0x08080808u) | (b & 0x07070707u);
    }
  }
  __device__ static void merge(const uint32_t (&sym)[2][4], const uint32_t (&raw)[2][2], uint32_t (&out)[4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t s = sym[0][h], r = raw[0][h];
      uint32_t a = (r & 0x80808080u) | ((s >> 1) & 0x78787878u) | ((r >> 4) & 0x07070707u);
      uint32_t b = ((r << 4) & 0x80808080u) | ((s << 3) & 0x78787878u) | (r & 0x07070707u);
      out[2 * h] = perm(a, b, 0x5140);
      out[2 * h + 1] = perm(a, b, 0x7362);
    }
  }
};

// fp8 e5m2: one symbol per element (the 5 exponent bits); the 3 other bits of 8 elements make a
// 24-bit little-endian raw word, so a chunk (two groups of 8) has 6 raw bytes.
template <>
struct Chunk<DType::kE5m2> {
  static constexpr int kElems = 16, kSyms = 16, kPlanes = 1;
  static constexpr int kRaw0 = 6, kRaw1 = 0;
  // Three bits at each byte's bottom (bytes j = 0..3) to bits 3j..3j+2.
  __device__ static uint32_t pack4(uint32_t r) {
    return (r & 7u) | ((r >> 5) & (7u << 3)) | ((r >> 10) & (7u << 6)) | ((r >> 15) & (7u << 9));
  }
  __device__ static uint32_t unpack4(uint32_t g) {
    return (g & 7u) | ((g << 5) & (7u << 8)) | ((g << 10) & (7u << 16)) | ((g << 15) & (7u << 24));
  }
  __device__ static void split(const uint32_t (&in)[4], uint32_t (&sym)[2][4], uint32_t (&raw)[2][2]) {
    uint32_t g[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      uint32_t p[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const uint32_t w = in[2 * h + i];
        sym[0][2 * h + i] = (w >> 2) & 0x1F1F1F1Fu;
        p[i] = pack4(((w >> 5) & 0x04040404u) | (w & 0x03030303u));
      }
      g[h] = p[0] | (p[1] << 12);
    }
    raw[0][0] = g[0] | (g[1] << 24);
    raw[0][1] = g[1] >> 8;
  }
  __device__ static void merge(const uint32_t (&sym)[2][4], const uint32_t (&raw)[2][2], uint32_t (&out)[4]) {
    const uint32_t g[2] = {raw[0][0] & 0xFFFFFFu, (raw[0][0] >> 24) | ((raw[0][1] & 0xFFFFu) << 8)};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const uint32_t r = unpack4(g[h] >> (12 * i));
        out[2 * h + i] = ((sym[0][2 * h + i] << 2) & 0x7C7C7C7Cu) | ((r << 5) & 0x80808080u) | (r & 0x03030303u);
      }
    }
  }
};

// Raw bytes of sub-plane r in one chunk.
template <DType T>
__host__ __device__ constexpr int raw_unit(int r) { return r ? Chunk<T>::kRaw1 : Chunk<T>::kRaw0; }

// Chunk c (16 bytes) of the nbytes of original data at src; the tail is zero-filled.
template <bool kAligned>
__device__ __forceinline__ void load_input(const uint8_t* src, uint64_t nbytes, uint64_t c, uint32_t (&in)[4]) {
  if (16 * c + 16 <= nbytes) bytes::ld128<kAligned>(src + 16 * c, in);
  else bytes::ld_partial(src + 16 * c, static_cast<int>(nbytes - 16 * c), in);
}
template <bool kAligned>
__device__ __forceinline__ void store_output(uint8_t* dst, uint64_t nbytes, uint64_t c, const uint32_t (&out)[4]) {
  if (16 * c + 16 <= nbytes) bytes::st128<kAligned>(dst + 16 * c, out);
  else if (16 * c < nbytes) bytes::st_partial(dst + 16 * c, static_cast<int>(nbytes - 16 * c), out);
}

// Chunk c's raw bytes to / from the raw section of the stream at `stream`, bounded by each
// sub-plane's size (the last chunk of a buffer may be partial).
template <DType T, bool kAligned>
__device__ __forceinline__ void store_raw(uint8_t* stream, uint64_t count, uint64_t c, const uint32_t (&raw)[2][2]) {
#pragma unroll
  for (int r = 0; r < format::raw_subplanes(T); ++r) {
    const uint64_t size = format::raw_subplane_bytes(T, count, r), at = c * raw_unit<T>(r);
    uint8_t* d = stream + format::raw_subplane_offset(T, count, r) + at;
    if (at + raw_unit<T>(r) <= size) bytes::st_n<kAligned>(d, raw_unit<T>(r), raw[r]);
    else if (at < size) bytes::st_partial(d, static_cast<int>(size - at), raw[r]);
  }
}
template <DType T, bool kAligned>
__device__ __forceinline__ void load_raw(const uint8_t* stream, uint64_t count, uint64_t c, uint32_t (&raw)[2][2]) {
#pragma unroll
  for (int r = 0; r < format::raw_subplanes(T); ++r) {
    const uint64_t size = format::raw_subplane_bytes(T, count, r), at = c * raw_unit<T>(r);
    const uint8_t* s = stream + format::raw_subplane_offset(T, count, r) + at;
    raw[r][0] = raw[r][1] = 0;
    if (at + raw_unit<T>(r) <= size) {
      bytes::ld_n<kAligned>(s, raw_unit<T>(r), raw[r]);
    } else {
#pragma unroll
      for (int b = 0; b < 8; ++b)
        if (at + b < size) raw[r][b / 4] |= uint32_t{s[b]} << (8 * (b % 4));
    }
  }
}

// load_raw for a chunk whose elements all lie below the buffer's count, with the sub-planes'
// starts given (`plane`, from format::raw_subplane_offset): no bounds to check and no offsets to
// compute per chunk (the decoder's whole windows).
template <DType T, bool kAligned>
__device__ __forceinline__ void load_raw_inside(const uint8_t* const (&plane)[2], uint64_t c, uint32_t (&raw)[2][2]) {
#pragma unroll
  for (int r = 0; r < format::raw_subplanes(T); ++r) {
    raw[r][0] = raw[r][1] = 0;
    bytes::ld_n<kAligned>(plane[r] + c * raw_unit<T>(r), raw_unit<T>(r), raw[r]);
  }
}

// Zero bytes between each raw sub-plane's end and the next 16-byte boundary (lanes of one group).
template <DType T>
__device__ __forceinline__ void zero_raw_padding(uint8_t* stream, uint64_t count, int lane) {
  for (int r = 0; r < format::raw_subplanes(T); ++r) {
    const uint64_t end = format::raw_subplane_offset(T, count, r) + format::raw_subplane_bytes(T, count, r);
    if (end + lane < format::align_up(end)) stream[end + lane] = 0;
  }
}

}  // namespace mpizip::kernels::split
