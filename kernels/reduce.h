// The arithmetic of MPIZip's reductions, shared by the CPU reduce (kernels/reduce_cpu.h) and the
// GPU reduce (kernels/reduce_gpu.h) so that both give the same bits for the same inputs. Host and
// device code; no GPU runtime dependency.
//
// One element of the result is a fold over the P inputs in rank order, r = 0, 1, ..., P-1:
//
//   SUM, PROD   acc = x_0; acc = acc + x_r (acc * x_r); result = acc
//               fp32 and fp64 in their own precision, each step rounded to nearest even (never
//               contracted into a fused multiply-add). bf16 and fp16 accumulate in fp32: every
//               input is widened exactly, the fold runs in fp32 as above, and the result is rounded
//               once to bf16 / fp16, to nearest even (overflow gives infinity, a NaN the canonical
//               NaN 0x7FFF, as CUDA's __float2bfloat16_rn and __float2half_rn do). The OCP fp8
//               types (E4M3, E5M2) the same way, rounded once to fp8 (f32_to_fp8: overflow gives
//               E5M2's infinity and E4M3's NaN, a NaN the canonical 0x7F). A NaN result of
//               fp32 and fp64 is the canonical quiet NaN too (0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF):
//               processors differ in which operand's payload an addition of NaNs keeps (x86 the
//               first's, the GPU none), and every rank must get the same bits.
//   MAX         acc = x_0; acc = (acc > x_r) ? acc : x_r
//   MIN         acc = x_0; acc = (acc < x_r) ? acc : x_r
//               The C comparison of Open MPI's MPI_MAX and MPI_MIN functions (`(a > b) ? a : b`,
//               a the partial result, b the next operand), applied in rank order. A comparison
//               with a NaN is false, so the fold takes x_r: a NaN partial result is replaced by the
//               next operand, and the result is NaN exactly when the last rank's operand is NaN.
//               A tie (equal values, +0 and -0 included) takes the later rank's operand. bf16 and
//               fp16 compare their exact fp32 values and select the operand's own bits, so NaN
//               payloads and zero signs pass through unchanged.
//
// Integers (every width, signed and unsigned: the C, Fortran and fixed-width integer types,
// MPI_CHAR, MPI_BYTE, MPI_C_BOOL), each step as the MPI libraries' C loops compute it:
//   SUM, PROD   modulo 2^width (two's complement wrap-around; Open MPI 4.1's AVX op component
//               saturates 8- and 16-bit sums of long vectors instead, open-mpi/ompi#8045, its
//               C loops and MPICH wrap around)
//   MAX, MIN    (acc > x_r) ? acc : x_r, (acc < x_r) ? acc : x_r
//   LAND, LOR, LXOR   1 or 0 from the operands' truth (non-zero)
//   BAND, BOR, BXOR   bitwise
// MINLOC, MAXLOC on the value-and-index pairs: see Fold below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/format.h"
#include "src/platform/status.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // the device intrinsics below (nvcc declares them itself)
#endif

namespace mpizip::kernels::reduce {

// The operations MPIZip reduces with itself: every predefined MPI operation. Values travel in
// collective headers.
enum class Op : uint8_t {
  kSum = 1, kProd = 2, kMin = 3, kMax = 4,       // MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX
  kLand = 5, kLor = 6, kLxor = 7,                // MPI_LAND, MPI_LOR, MPI_LXOR
  kBand = 8, kBor = 9, kBxor = 10,               // MPI_BAND, MPI_BOR, MPI_BXOR
  kMinloc = 11, kMaxloc = 12,                    // MPI_MINLOC, MPI_MAXLOC
};

inline constexpr bool op_valid(uint8_t o) { return o >= 1 && o <= 12; }

// The element types of a reduction. The six float types have their wire format's values
// (format::DType); the integers are stored in two's complement (an MPI_CHAR, MPI_INT, MPI_LONG,
// MPI_C_BOOL, Fortran INTEGER, ... is the fixed-width type of its size and signedness: the caller
// maps it, src/core/reduce_type.h); the pairs are MPI's value-and-index structs of MPI_MINLOC and
// MPI_MAXLOC, laid out as C lays out `struct { T v; int k; }` (MPI_FLOAT_INT, MPI_DOUBLE_INT,
// MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT).
enum class Type : uint8_t {
  kBf16 = 1, kFp16 = 2, kFp32 = 3, kFp64 = 4, kE4m3 = 5, kE5m2 = 6,
  kI8 = 16, kU8 = 17, kI16 = 18, kU16 = 19, kI32 = 20, kU32 = 21, kI64 = 22, kU64 = 23,
  kFloatInt = 32, kDoubleInt = 33, kLongInt = 34, k2Int = 35, kShortInt = 36,
};

MPIZIP_HD constexpr bool is_float(Type t) { return t >= Type::kBf16 && t <= Type::kE5m2; }
MPIZIP_HD constexpr bool is_integer(Type t) { return t >= Type::kI8 && t <= Type::kU64; }
MPIZIP_HD constexpr bool is_pair(Type t) { return t >= Type::kFloatInt && t <= Type::kShortInt; }
inline constexpr bool type_valid(uint8_t t) {
  return is_float(static_cast<Type>(t)) || is_integer(static_cast<Type>(t)) ||
         is_pair(static_cast<Type>(t));
}

// The reduction type of a float element type of the wire format.
MPIZIP_HD constexpr Type type_of(format::DType t) { return static_cast<Type>(t); }

// Which (type, op) pairs MPI defines and MPIZip reduces: arithmetic and MIN/MAX on floats; every
// op but MINLOC/MAXLOC on integers (the logical ops on C integers and bools, the bitwise ones on
// integers and bytes); MINLOC/MAXLOC on the pairs.
MPIZIP_HD constexpr bool valid(Type t, Op o) {
  if (is_float(t)) return o >= Op::kSum && o <= Op::kMax;
  if (is_integer(t)) return o >= Op::kSum && o <= Op::kBxor;
  if (is_pair(t)) return o == Op::kMinloc || o == Op::kMaxloc;
  return false;
}

// Bit casts that compile on the host and the device.
MPIZIP_HD inline float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}
MPIZIP_HD inline double f64_from_bits(uint64_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}

MPIZIP_HD inline uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// Round-to-nearest-even additions and products that the compiler may not fuse or reassociate.
MPIZIP_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MPIZIP_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
MPIZIP_HD inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
MPIZIP_HD inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// bf16 and fp16 conversions in integer arithmetic, identical on host and device.
inline constexpr uint16_t kCanonicalNaN16 = 0x7FFF;

MPIZIP_HD inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t{h} << 16); }

MPIZIP_HD inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalNaN16;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

MPIZIP_HD inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant x 2^-24, exact in fp32.
    const float v = mul_rn(static_cast<float>(mant), f32_from_bits(0x33800000u));
    return f32_from_bits(f32_bits(v) | sign);
  }
  if (exp == 31) return f32_from_bits(sign | 0x7F800000u | (mant << 13));
  return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

MPIZIP_HD inline uint16_t f32_to_fp16(float f) {
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kCanonicalNaN16;
  if (a >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (a <= 0x33000000u) return static_cast<uint16_t>(sign);            // <= 2^-25 rounds to 0
  if (a < 0x38800000u) {
    // Subnormal result: round (mantissa with its implicit bit) >> shift to nearest even.
    const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - (a >> 23);  // 14..24
    const uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    return static_cast<uint16_t>(sign |
                                 (r + ((rem > half || (rem == half && (r & 1u))) ? 1u : 0u)));
  }
  const uint32_t b = a - 0x38000000u;  // rebias the exponent from 127 to 15
  return static_cast<uint16_t>(sign | ((b + 0xFFFu + ((b >> 13) & 1u)) >> 13));
}

// The OCP 8-bit floats (OFP8): E4M3 (bias 7, no infinities, NaN S.1111.111, largest 448) and E5M2
// (bias 15, IEEE-like: infinities S.11111.00, NaNs S.11111.xx). Widening is exact.
template <int kExpBits, int kManBits>
MPIZIP_HD inline float fp8_to_f32(uint8_t h) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr uint32_t kExpMax = (1u << kExpBits) - 1u, kManMask = (1u << kManBits) - 1u;
  const uint32_t sign = uint32_t{h & 0x80u} << 24;
  const uint32_t exp = (h >> kManBits) & kExpMax, mant = h & kManMask;
  if (kExpBits == 4 && exp == kExpMax && mant == kManMask) return f32_from_bits(sign | 0x7FC00000u);
  if (kExpBits == 5 && exp == kExpMax) return f32_from_bits(sign | 0x7F800000u | (mant << 21));
  if (exp == 0) {
    // Zero or subnormal: mant x 2^(1 - bias - mantissa bits), exact in fp32.
    const float scale = f32_from_bits(static_cast<uint32_t>(127 + 1 - kBias - kManBits) << 23);
    return f32_from_bits(f32_bits(mul_rn(static_cast<float>(mant), scale)) | sign);
  }
  return f32_from_bits(sign | ((exp + 127u - kBias) << 23) | (mant << (23 - kManBits)));
}

// fp32 to OFP8, rounded to nearest even as if the exponent had no upper bound; a result beyond the
// largest finite value is infinity for E5M2 and the canonical NaN for E4M3 (which has no infinity:
// the non-saturating conversion of the OCP specification and of CUDA's __NV_NOSAT); a NaN is the
// canonical NaN 0x7F of either format.
inline constexpr uint8_t kCanonicalNaN8 = 0x7F;
template <int kExpBits, int kManBits>
MPIZIP_HD inline uint8_t f32_to_fp8(float f) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr uint32_t kMaxFinite = kExpBits == 4 ? 0x7Eu : 0x7Bu;
  const uint32_t u = f32_bits(f);
  const uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kCanonicalNaN8;
  const uint8_t overflow = kExpBits == 4 ? kCanonicalNaN8 : static_cast<uint8_t>(sign | 0x7Cu);
  const int e = static_cast<int>(a >> 23) - 127;  // -127 for zero and fp32 subnormals
  if (e > kBias + 1) return overflow;              // at least twice the largest finite value
  // The result's exponent (the subnormal range's for small values) and how far the fp32
  // significand (implicit bit included) shifts right to its quantum.
  const int te = e < 1 - kBias ? 1 - kBias : e;
  const int shift = te - e + 23 - kManBits;
  if (e == -127 || shift > 24) return static_cast<uint8_t>(sign);  // below half the least subnormal
  const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  // Exponent field plus significand: a carry out of the significand raises the exponent.
  const uint32_t bits = (static_cast<uint32_t>(te + kBias - 1) << kManBits) + r;
  if (bits > kMaxFinite) return overflow;
  return static_cast<uint8_t>(sign | bits);
}

// Per float type: how the data is stored and in what precision SUM and PROD accumulate.
template <Type T>
struct Element;
template <>
struct Element<Type::kBf16> {
  using Storage = uint16_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return bf16_to_f32(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_bf16(a); }
};
template <>
struct Element<Type::kFp16> {
  using Storage = uint16_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return fp16_to_f32(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_fp16(a); }
};
template <>
struct Element<Type::kE4m3> {
  using Storage = uint8_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return fp8_to_f32<4, 3>(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_fp8<4, 3>(a); }
};
template <>
struct Element<Type::kE5m2> {
  using Storage = uint8_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return fp8_to_f32<5, 2>(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_fp8<5, 2>(a); }
};
template <>
struct Element<Type::kFp32> {
  using Storage = float;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return s; }
  static MPIZIP_HD Storage narrow(Acc a) {
    if (a != a) return f32_from_bits(0x7FFFFFFFu);
    return a;
  }
};
template <>
struct Element<Type::kFp64> {
  using Storage = double;
  using Acc = double;
  static MPIZIP_HD Acc widen(Storage s) { return s; }
  static MPIZIP_HD Storage narrow(Acc a) {
    if (a != a) {
      return f64_from_bits(0x7FFFFFFFFFFFFFFFull);
    }
    return a;
  }
};

// MPI's value-and-index pairs, as C lays them out (`struct { V v; int k; }`), held as their bytes so
// that every copy, on the CPU and the GPU alike, keeps the padding bytes too (a copy of a struct of
// members may leave them out): a fold's result is the bytes of the operand it picked, its index
// replaced where values tie.
template <typename V>
struct PairLayout {
  V v;
  int k;
};
template <typename V>
struct alignas(alignof(PairLayout<V>)) Pair {
  unsigned char b[sizeof(PairLayout<V>)];
  static constexpr unsigned kIndexAt = offsetof(PairLayout<V>, k);
  MPIZIP_HD V value() const {
    V v;
    copy_bytes(&v, b, sizeof v);
    return v;
  }
  MPIZIP_HD int index() const {
    int k;
    copy_bytes(&k, b + kIndexAt, sizeof k);
    return k;
  }
  MPIZIP_HD void set_index(int k) { copy_bytes(b + kIndexAt, &k, sizeof k); }

 private:
  static MPIZIP_HD void copy_bytes(void* dst, const void* src, unsigned n) {
    for (unsigned i = 0; i < n; ++i)
      static_cast<unsigned char*>(dst)[i] = static_cast<const unsigned char*>(src)[i];
  }
};

// The storage of each integer and pair type.
template <Type T> struct Stored;
template <> struct Stored<Type::kI8> { using type = int8_t; };
template <> struct Stored<Type::kU8> { using type = uint8_t; };
template <> struct Stored<Type::kI16> { using type = int16_t; };
template <> struct Stored<Type::kU16> { using type = uint16_t; };
template <> struct Stored<Type::kI32> { using type = int32_t; };
template <> struct Stored<Type::kU32> { using type = uint32_t; };
template <> struct Stored<Type::kI64> { using type = int64_t; };
template <> struct Stored<Type::kU64> { using type = uint64_t; };
template <> struct Stored<Type::kFloatInt> { using type = Pair<float>; };
template <> struct Stored<Type::kDoubleInt> { using type = Pair<double>; };
template <> struct Stored<Type::kLongInt> { using type = Pair<int64_t>; };  // LP64: long is 64-bit
template <> struct Stored<Type::k2Int> { using type = Pair<int32_t>; };
template <> struct Stored<Type::kShortInt> { using type = Pair<int16_t>; };

static_assert(sizeof(Pair<double>) == 16 && sizeof(Pair<int16_t>) == 8 && sizeof(Pair<float>) == 8,
              "pairs as C lays them out");

// Bytes of one element (a pair's with C's padding: MPI_DOUBLE_INT's extent).
MPIZIP_HD constexpr uint32_t type_bytes(Type t) {
  switch (t) {
    case Type::kBf16: case Type::kFp16: case Type::kI16: case Type::kU16: return 2;
    case Type::kFp32: case Type::kI32: case Type::kU32: return 4;
    case Type::kFp64: case Type::kI64: case Type::kU64: return 8;
    case Type::kI8: case Type::kU8: case Type::kE4m3: case Type::kE5m2: return 1;
    case Type::kFloatInt: case Type::k2Int: case Type::kShortInt: return 8;
    case Type::kDoubleInt: case Type::kLongInt: return 16;
  }
  return 0;
}

// The fold of one element (see the top of this file): first() takes rank 0's operand, next() each
// later rank's in order, last() gives the result. Floats' SUM and PROD carry the accumulator type;
// every other fold carries the element itself.
template <Type T, Op O, typename = void>
struct Fold;

// Floats.
template <Type T, Op O>
struct Fold<T, O, std::enable_if_t<is_float(T)>> {
  using E = Element<T>;
  using Storage = typename E::Storage;
  static constexpr bool kSelect = O == Op::kMin || O == Op::kMax;
  using State = std::conditional_t<kSelect, Storage, typename E::Acc>;

  static MPIZIP_HD State first(Storage x) {
    if constexpr (kSelect)
      return x;
    else
      return E::widen(x);
  }
  static MPIZIP_HD State next(State acc, Storage x) {
    if constexpr (O == Op::kSum)
      return add_rn(acc, E::widen(x));
    else if constexpr (O == Op::kProd)
      return mul_rn(acc, E::widen(x));
    else if constexpr (O == Op::kMax)
      return E::widen(acc) > E::widen(x) ? acc : x;
    else
      return E::widen(acc) < E::widen(x) ? acc : x;
  }
  static MPIZIP_HD Storage last(State acc) {
    if constexpr (kSelect)
      return acc;
    else
      return E::narrow(acc);
  }
};

// Integers: SUM and PROD wrap around (computed unsigned, as two's complement hardware does and as
// the MPI libraries' C loops give), MIN and MAX by C comparison, the logical ops give 0 or 1.
template <Type T, Op O>
struct Fold<T, O, std::enable_if_t<is_integer(T)>> {
  using Storage = typename Stored<T>::type;
  using State = Storage;
  // Unsigned arithmetic at least as wide as int, so that no promotion makes it signed.
  using Wide = std::conditional_t<(sizeof(Storage) < 4), uint32_t, std::make_unsigned_t<Storage>>;

  static MPIZIP_HD State first(Storage x) { return x; }
  static MPIZIP_HD State next(State a, Storage x) {
    if constexpr (O == Op::kSum)
      return static_cast<Storage>(static_cast<Wide>(a) + static_cast<Wide>(x));
    else if constexpr (O == Op::kProd)
      return static_cast<Storage>(static_cast<Wide>(a) * static_cast<Wide>(x));
    else if constexpr (O == Op::kMax)
      return a > x ? a : x;
    else if constexpr (O == Op::kMin)
      return a < x ? a : x;
    else if constexpr (O == Op::kLand)
      return static_cast<Storage>((a != 0 && x != 0) ? 1 : 0);
    else if constexpr (O == Op::kLor)
      return static_cast<Storage>((a != 0 || x != 0) ? 1 : 0);
    else if constexpr (O == Op::kLxor)
      return static_cast<Storage>(((a != 0) != (x != 0)) ? 1 : 0);
    else if constexpr (O == Op::kBand)
      return static_cast<Storage>(a & x);
    else if constexpr (O == Op::kBor)
      return static_cast<Storage>(a | x);
    else
      return static_cast<Storage>(a ^ x);
  }
  static MPIZIP_HD Storage last(State a) { return a; }
};

// 8- and 16-bit integers folded a 32-bit word at a time (four or two lanes), for SUM and the
// bitwise ops: the same bits as Fold lane by lane, in a handful of instructions a word where Fold
// takes several an element (the intra-node engine's byte fold was bound by them). A lane's sum
// wraps modulo 2^width without carrying into the next: the low bits of each lane add with the
// top bit masked off, and the top bit is the sum of the three top bits, an exclusive or.
// kWords is false for the other types and ops, which fold element by element.
template <Type T>
inline constexpr int kLaneBits = 0;
template <> inline constexpr int kLaneBits<Type::kI8> = 8;
template <> inline constexpr int kLaneBits<Type::kU8> = 8;
template <> inline constexpr int kLaneBits<Type::kI16> = 16;
template <> inline constexpr int kLaneBits<Type::kU16> = 16;

template <Type T, Op O>
struct WordFold {
  static constexpr int kBits = kLaneBits<T>;
  static constexpr bool kWords =
      kBits != 0 && (O == Op::kSum || O == Op::kBand || O == Op::kBor || O == Op::kBxor);
  static constexpr uint32_t kTop = kBits == 8 ? 0x80808080u : 0x80008000u;

  static MPIZIP_HD uint32_t next(uint32_t a, uint32_t x) {
    if constexpr (O == Op::kSum)
      return ((a & ~kTop) + (x & ~kTop)) ^ ((a ^ x) & kTop);
    else if constexpr (O == Op::kBand)
      return a & x;
    else if constexpr (O == Op::kBor)
      return a | x;
    else
      return a ^ x;
  }
};

// Pairs: MINLOC takes the operand with the smaller value, MAXLOC the larger, comparing the
// partial result a with the next operand x as Open MPI's and MPICH's loops do (`a.v < x.v`: a;
// equal values: x's value with the smaller index; otherwise x). A NaN value compares false, so
// the fold takes x. A single operand is passed through bit for bit (padding included).
template <Type T, Op O>
struct Fold<T, O, std::enable_if_t<is_pair(T)>> {
  using Storage = typename Stored<T>::type;
  using State = Storage;
  static MPIZIP_HD State first(Storage x) { return x; }
  static MPIZIP_HD State next(State a, Storage x) {
    const auto av = a.value(), xv = x.value();
    const bool better = O == Op::kMinloc ? av < xv : av > xv;
    if (better) return a;
    if (av == xv && a.index() < x.index()) x.set_index(a.index());
    return x;
  }
  static MPIZIP_HD Storage last(State a) { return a; }
};

// The float types of the wire format that MPIZip reduces (the two-shot allreduce's types): all.
inline constexpr bool dtype_reducible(format::DType t) {
  return t >= format::DType::kBf16 && t <= format::DType::kE5m2;
}

// Signed and unsigned integers of one width give the same bits under every op but MIN and MAX
// (two's complement; the logical ops test for zero): one instantiation serves both, the unsigned.
MPIZIP_HD constexpr Type canonical(Type t, Op o) {
  if (!is_integer(t) || o == Op::kMin || o == Op::kMax) return t;
  return static_cast<Type>(static_cast<uint8_t>(t) | 1u);
}

// Which types a dispatch instantiates: every reducible type, or the floats only (kernels that
// decode compressed streams, which hold floats alone).
enum class Types { kAll, kFloats };

// The one switch over element type x op, for every reduction MPIZip instantiates (the CPU reduce,
// the GPU reduce, the fused decode-fold, the TMA engine's fold): calls
// f(std::integral_constant<Type, T>{}, std::integral_constant<Op, O>{}) with T = canonical(t, op)
// when valid(t, op) and t is among `kSet`, and returns what it returns; kInvalidArgument for any
// other pair (nothing is instantiated for them). Host code.
template <Types kSet = Types::kAll, typename F>
inline Status dispatch(Type t, Op op, F&& f) {
  auto by_op = [&](auto type) -> Status {
    constexpr Type T = decltype(type)::value;
    auto one = [&](auto o) -> Status {
      constexpr Op O = decltype(o)::value;
      if constexpr (valid(T, O) && canonical(T, O) == T && (kSet == Types::kAll || is_float(T)))
        return f(type, o);
      else
        return Status::kInvalidArgument;
    };
    switch (op) {
      case Op::kSum: return one(std::integral_constant<Op, Op::kSum>{});
      case Op::kProd: return one(std::integral_constant<Op, Op::kProd>{});
      case Op::kMin: return one(std::integral_constant<Op, Op::kMin>{});
      case Op::kMax: return one(std::integral_constant<Op, Op::kMax>{});
      case Op::kLand: return one(std::integral_constant<Op, Op::kLand>{});
      case Op::kLor: return one(std::integral_constant<Op, Op::kLor>{});
      case Op::kLxor: return one(std::integral_constant<Op, Op::kLxor>{});
      case Op::kBand: return one(std::integral_constant<Op, Op::kBand>{});
      case Op::kBor: return one(std::integral_constant<Op, Op::kBor>{});
      case Op::kBxor: return one(std::integral_constant<Op, Op::kBxor>{});
      case Op::kMinloc: return one(std::integral_constant<Op, Op::kMinloc>{});
      case Op::kMaxloc: return one(std::integral_constant<Op, Op::kMaxloc>{});
    }
    return Status::kInvalidArgument;
  };
  t = canonical(t, op);
#define MPIZIP_REDUCE_TYPE(T) \
  case Type::T: return by_op(std::integral_constant<Type, Type::T>{});
  switch (t) {
    MPIZIP_REDUCE_TYPE(kBf16) MPIZIP_REDUCE_TYPE(kFp16) MPIZIP_REDUCE_TYPE(kFp32)
    MPIZIP_REDUCE_TYPE(kFp64) MPIZIP_REDUCE_TYPE(kE4m3) MPIZIP_REDUCE_TYPE(kE5m2) MPIZIP_REDUCE_TYPE(kI8) MPIZIP_REDUCE_TYPE(kU8)
    MPIZIP_REDUCE_TYPE(kI16) MPIZIP_REDUCE_TYPE(kU16) MPIZIP_REDUCE_TYPE(kI32)
    MPIZIP_REDUCE_TYPE(kU32) MPIZIP_REDUCE_TYPE(kI64) MPIZIP_REDUCE_TYPE(kU64)
    MPIZIP_REDUCE_TYPE(kFloatInt) MPIZIP_REDUCE_TYPE(kDoubleInt) MPIZIP_REDUCE_TYPE(kLongInt)
    MPIZIP_REDUCE_TYPE(k2Int) MPIZIP_REDUCE_TYPE(kShortInt)
  }
#undef MPIZIP_REDUCE_TYPE
  return Status::kInvalidArgument;
}

}  // namespace mpizip::kernels::reduce
