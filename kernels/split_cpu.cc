#include "kernels/split_cpu.h"

#include <cstring>

namespace mpizip::kernels::cpu {
namespace {

using format::DType;

// Elements per run. Each type's kernels map one run of kRun elements with a loop of known trip
// count over restrict pointers, which the compiler vectorises at -O2; a chunk is whole runs plus
// one run padded with zero elements, which is exactly the padding the format asks for.
constexpr uint64_t kRun = 64;

template <typename T>
inline T ld(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
inline void st(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// bf16 and fp16 split the same way: a byte around the exponent, sign and 7 low bits raw.
struct Half {
  static constexpr DType kType = DType::kBf16;
  static constexpr uint64_t kElem = 2;
  static constexpr uint64_t sym_bytes(uint64_t n) { return n; }
  static constexpr uint64_t raw_bytes(uint64_t n, int) { return n; }
  static void split(const uint8_t* __restrict in, uint8_t* __restrict s0, uint8_t* __restrict, uint8_t* __restrict r0, uint8_t* __restrict) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint16_t v = ld<uint16_t>(in + 2 * i);
      s0[i] = static_cast<uint8_t>(v >> 7);
      r0[i] = static_cast<uint8_t>(((v >> 8) & 0x80) | (v & 0x7F));
    }
  }
  static void merge(const uint8_t* __restrict r0, const uint8_t* __restrict, const uint8_t* __restrict s0, const uint8_t* __restrict, uint8_t* __restrict out) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint16_t r = r0[i], s = s0[i];
      st<uint16_t>(out + 2 * i, static_cast<uint16_t>(((r & 0x80) << 8) | (s << 7) | (r & 0x7F)));
    }
  }
};

struct Fp32 {
  static constexpr DType kType = DType::kFp32;
  static constexpr uint64_t kElem = 4;
  static constexpr uint64_t sym_bytes(uint64_t n) { return n; }
  static constexpr uint64_t raw_bytes(uint64_t n, int i) { return i == 0 ? 2 * n : n; }
  static void split(const uint8_t* __restrict in, uint8_t* __restrict s0, uint8_t* __restrict, uint8_t* __restrict r0, uint8_t* __restrict r1) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint32_t v = ld<uint32_t>(in + 4 * i);
      s0[i] = static_cast<uint8_t>(v >> 23);
      st<uint16_t>(r0 + 2 * i, static_cast<uint16_t>(v));
      r1[i] = static_cast<uint8_t>(((v >> 24) & 0x80) | ((v >> 16) & 0x7F));
    }
  }
  static void merge(const uint8_t* __restrict r0, const uint8_t* __restrict r1, const uint8_t* __restrict s0, const uint8_t* __restrict, uint8_t* __restrict out) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint32_t hi = r1[i], s = s0[i];
      st<uint32_t>(out + 4 * i, ((hi & 0x80) << 24) | (s << 23) | ((hi & 0x7F) << 16) | ld<uint16_t>(r0 + 2 * i));
    }
  }
};

struct Fp64 {
  static constexpr DType kType = DType::kFp64;
  static constexpr uint64_t kElem = 8;
  static constexpr uint64_t sym_bytes(uint64_t n) { return n; }
  static constexpr uint64_t raw_bytes(uint64_t n, int i) { return i == 0 ? 4 * n : 2 * n; }
  static void split(const uint8_t* __restrict in, uint8_t* __restrict s0, uint8_t* __restrict s1, uint8_t* __restrict r0, uint8_t* __restrict r1) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint64_t v = ld<uint64_t>(in + 8 * i);
      s0[i] = static_cast<uint8_t>(v >> 55);
      s1[i] = static_cast<uint8_t>(v >> 47);
      st<uint32_t>(r0 + 4 * i, static_cast<uint32_t>(v));
      st<uint16_t>(r1 + 2 * i, static_cast<uint16_t>(((v >> 48) & 0x8000) | ((v >> 32) & 0x7FFF)));
    }
  }
  static void merge(const uint8_t* __restrict r0, const uint8_t* __restrict r1, const uint8_t* __restrict s0, const uint8_t* __restrict s1, uint8_t* __restrict out) {
    for (uint64_t i = 0; i < kRun; ++i) {
      uint64_t hi = ld<uint16_t>(r1 + 2 * i);
      uint64_t v = ((hi & 0x8000) << 48) | (uint64_t{s0[i]} << 55) | (uint64_t{s1[i]} << 47) |
                   ((hi & 0x7FFF) << 32) | ld<uint32_t>(r0 + 4 * i);
      st<uint64_t>(out + 8 * i, v);
    }
  }
};

// e4m3: one symbol per pair of elements (both 4-bit exponents); sign and 3 mantissa bits of each
// element raw, one byte per pair.
struct E4m3 {
  static constexpr DType kType = DType::kE4m3;
  static constexpr uint64_t kElem = 1;
  static constexpr uint64_t sym_bytes(uint64_t n) { return (n + 1) / 2; }
  static constexpr uint64_t raw_bytes(uint64_t n, int) { return (n + 1) / 2; }
  static void split(const uint8_t* __restrict in, uint8_t* __restrict s0, uint8_t* __restrict, uint8_t* __restrict r0, uint8_t* __restrict) {
    for (uint64_t i = 0; i < kRun / 2; ++i) {
      uint8_t a = in[2 * i], b = in[2 * i + 1];
      s0[i] = static_cast<uint8_t>((((a >> 3) & 0xF) << 4) | ((b >> 3) & 0xF));
      r0[i] = static_cast<uint8_t>((a & 0x80) | ((a & 7) << 4) | ((b & 0x80) >> 4) | (b & 7));
    }
  }
  static void merge(const uint8_t* __restrict r0, const uint8_t* __restrict, const uint8_t* __restrict s0, const uint8_t* __restrict, uint8_t* __restrict out) {
    for (uint64_t i = 0; i < kRun / 2; ++i) {
      uint8_t r = r0[i], s = s0[i];
      out[2 * i] = static_cast<uint8_t>((r & 0x80) | ((s >> 4) << 3) | ((r >> 4) & 7));
      out[2 * i + 1] = static_cast<uint8_t>(((r & 0x08) << 4) | ((s & 0xF) << 3) | (r & 7));
    }
  }
};

// e5m2: one 5-bit exponent symbol per element; sign and 2 mantissa bits raw, 8 elements packed in
// the 3 bytes of a 24-bit little-endian word. Eight elements are handled at once in a 64-bit word.
struct E5m2 {
  static constexpr DType kType = DType::kE5m2;
  static constexpr uint64_t kElem = 1;
  static constexpr uint64_t sym_bytes(uint64_t n) { return n; }
  static constexpr uint64_t raw_bytes(uint64_t n, int) { return 3 * ((n + 7) / 8); }
  static constexpr uint64_t kBytes = 0x0101010101010101ull;
  // Packs the 3-bit field of each byte (r_j in byte j) into r_0 | r_1 << 3 | ... | r_7 << 21.
  static uint32_t pack3(uint64_t r) {
    r = (r | r >> 5) & 0x003F003F003F003Full;
    r = (r | r >> 10) & 0x00000FFF00000FFFull;
    return static_cast<uint32_t>((r | r >> 20) & 0xFFFFFF);
  }
  static uint64_t unpack3(uint64_t w) {
    w = (w | w << 20) & 0x00000FFF00000FFFull;
    w = (w | w << 10) & 0x003F003F003F003Full;
    return (w | w << 5) & 7 * kBytes;
  }
  static void split(const uint8_t* __restrict in, uint8_t* __restrict s0, uint8_t* __restrict, uint8_t* __restrict r0,
                    uint8_t* __restrict) {
    for (uint64_t g = 0; g < kRun / 8; ++g) {
      uint64_t v = ld<uint64_t>(in + 8 * g);
      st<uint64_t>(s0 + 8 * g, (v >> 2) & 0x1F * kBytes);
      uint32_t w = pack3(((v >> 5) & 4 * kBytes) | (v & 3 * kBytes));
      r0[3 * g] = static_cast<uint8_t>(w);
      r0[3 * g + 1] = static_cast<uint8_t>(w >> 8);
      r0[3 * g + 2] = static_cast<uint8_t>(w >> 16);
    }
  }
  static void merge(const uint8_t* __restrict r0, const uint8_t* __restrict, const uint8_t* __restrict s0,
                    const uint8_t* __restrict, uint8_t* __restrict out) {
    for (uint64_t g = 0; g < kRun / 8; ++g) {
      uint64_t r = unpack3(r0[3 * g] | uint64_t{r0[3 * g + 1]} << 8 | uint64_t{r0[3 * g + 2]} << 16);
      uint64_t sv = ld<uint64_t>(s0 + 8 * g);  // symbols are below 32: no carry between bytes
      st<uint64_t>(out + 8 * g, (r & 4 * kBytes) << 5 | sv << 2 | (r & 3 * kBytes));
    }
  }
};

// Local buffers of one run: input elements, symbols of two planes, two raw sub-planes.
struct Run {
  alignas(32) uint8_t elems[kRun * 8];
  alignas(32) uint8_t sym[2][kRun];
  alignas(32) uint8_t raw[2][kRun * 4];
};

// Whole runs go through the kernels in place (their pointers are restrict: the compiler needs no
// alias checks); the last partial run goes through a zero-padded local copy.
template <typename K>
void split_type(const uint8_t* src, Chunk c, uint8_t* const raw[2], uint8_t* const sym[2]) {
  const uint8_t* in = src + c.first * K::kElem;
  uint8_t* r[2] = {raw[0] + K::raw_bytes(c.first, 0), raw[1] + K::raw_bytes(c.first, 1)};
  uint64_t at = 0;
  for (; at + kRun <= c.n; at += kRun)
    K::split(in + at * K::kElem, sym[0] + K::sym_bytes(at), sym[1] + K::sym_bytes(at), r[0] + K::raw_bytes(at, 0),
             r[1] + K::raw_bytes(at, 1));
  if (at == c.n) return;
  const uint64_t n = c.n - at;
  Run b;
  std::memset(b.elems, 0, sizeof b.elems);
  std::memcpy(b.elems, in + at * K::kElem, n * K::kElem);
  K::split(b.elems, b.sym[0], b.sym[1], b.raw[0], b.raw[1]);
  for (int p = 0; p < format::planes(K::kType); ++p)
    std::memcpy(sym[p] + K::sym_bytes(at), b.sym[p], K::sym_bytes(n));
  for (int i = 0; i < format::raw_subplanes(K::kType); ++i)
    std::memcpy(r[i] + K::raw_bytes(at, i), b.raw[i], K::raw_bytes(n, i));
}

template <typename K>
void merge_type(const uint8_t* const raw[2], const uint8_t* const sym[2], Chunk c, uint8_t* dst) {
  uint8_t* out = dst + c.first * K::kElem;
  const uint8_t* r[2] = {raw[0] + K::raw_bytes(c.first, 0), raw[1] + K::raw_bytes(c.first, 1)};
  uint64_t at = 0;
  for (; at + kRun <= c.n; at += kRun)
    K::merge(r[0] + K::raw_bytes(at, 0), r[1] + K::raw_bytes(at, 1), sym[0] + K::sym_bytes(at),
             sym[1] + K::sym_bytes(at), out + at * K::kElem);
  if (at == c.n) return;
  const uint64_t n = c.n - at;
  Run b;
  for (int p = 0; p < format::planes(K::kType); ++p)
    std::memcpy(b.sym[p], sym[p] + K::sym_bytes(at), K::sym_bytes(n));
  for (int i = 0; i < format::raw_subplanes(K::kType); ++i)
    std::memcpy(b.raw[i], r[i] + K::raw_bytes(at, i), K::raw_bytes(n, i));
  K::merge(b.raw[0], b.raw[1], b.sym[0], b.sym[1], b.elems);
  std::memcpy(out + at * K::kElem, b.elems, n * K::kElem);
}

// The one place where the element type picks its kernels.
template <typename F>
void with_kernels(DType t, F&& f) {
  switch (t) {
    case DType::kBf16: case DType::kFp16: return f.template operator()<Half>();
    case DType::kFp32: return f.template operator()<Fp32>();
    case DType::kFp64: return f.template operator()<Fp64>();
    case DType::kE4m3: return f.template operator()<E4m3>();
    case DType::kE5m2: return f.template operator()<E5m2>();
  }
}

}  // namespace

void split_chunk(DType t, const uint8_t* src, Chunk c, uint8_t* const raw[2], uint8_t* const sym[2]) {
  with_kernels(t, [&]<typename K>() { split_type<K>(src, c, raw, sym); });
}

void merge_chunk(DType t, const uint8_t* const raw[2], const uint8_t* const sym[2], Chunk c,
                 uint8_t* dst) {
  with_kernels(t, [&]<typename K>() { merge_type<K>(raw, sym, c, dst); });
}

}  // namespace mpizip::kernels::cpu
