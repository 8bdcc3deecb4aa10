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
//               NaN 0x7FFF, as CUDA's __float2bfloat16_rn and __float2half_rn do). A NaN result of
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
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/format.h"
#include "src/platform/status.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // the device intrinsics below (nvcc declares them itself)
#endif

namespace mpizip::kernels::reduce {

// The reductions MPIZip performs itself (MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX). Values travel in
// collective headers.
enum class Op : uint8_t { kSum = 1, kProd = 2, kMin = 3, kMax = 4 };

inline constexpr bool op_valid(uint8_t o) { return o >= 1 && o <= 4; }

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

// Per element type: how the data is stored and in what precision SUM and PROD accumulate.
template <format::DType T>
struct Element;
template <>
struct Element<format::DType::kBf16> {
  using Storage = uint16_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return bf16_to_f32(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_bf16(a); }
};
template <>
struct Element<format::DType::kFp16> {
  using Storage = uint16_t;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return fp16_to_f32(s); }
  static MPIZIP_HD Storage narrow(Acc a) { return f32_to_fp16(a); }
};
template <>
struct Element<format::DType::kFp32> {
  using Storage = float;
  using Acc = float;
  static MPIZIP_HD Acc widen(Storage s) { return s; }
  static MPIZIP_HD Storage narrow(Acc a) {
    if (a != a) return f32_from_bits(0x7FFFFFFFu);
    return a;
  }
};
template <>
struct Element<format::DType::kFp64> {
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

// The fold of one element (see the top of this file): first() takes rank 0's operand, next() each
// later rank's in order, last() gives the result. SUM and PROD carry the accumulator type; MIN and
// MAX carry the selected operand's own bits.
template <format::DType T, Op O>
struct Fold {
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

// The types MPIZip reduces itself.
inline constexpr bool dtype_reducible(format::DType t) {
  return t == format::DType::kBf16 || t == format::DType::kFp16 || t == format::DType::kFp32 ||
         t == format::DType::kFp64;
}

// The one switch over element type x op, for every reduction MPIZip instantiates (the CPU reduce,
// the GPU reduce, the fused decode-fold, the TMA engine's fold): calls
// f(std::integral_constant<DType, T>{}, std::integral_constant<Op, O>{}) for the reducible type `t`
// and the op `op`, and returns what it returns; kInvalidArgument for any other pair. Host code.
template <typename F>
inline Status dispatch(format::DType t, Op op, F&& f) {
  auto by_op = [&](auto type) -> Status {
    switch (op) {
      case Op::kSum: return f(type, std::integral_constant<Op, Op::kSum>{});
      case Op::kProd: return f(type, std::integral_constant<Op, Op::kProd>{});
      case Op::kMin: return f(type, std::integral_constant<Op, Op::kMin>{});
      case Op::kMax: return f(type, std::integral_constant<Op, Op::kMax>{});
    }
    return Status::kInvalidArgument;
  };
  using format::DType;
  switch (t) {
    case DType::kBf16: return by_op(std::integral_constant<DType, DType::kBf16>{});
    case DType::kFp16: return by_op(std::integral_constant<DType, DType::kFp16>{});
    case DType::kFp32: return by_op(std::integral_constant<DType, DType::kFp32>{});
    case DType::kFp64: return by_op(std::integral_constant<DType, DType::kFp64>{});
    default: return Status::kInvalidArgument;
  }
}

}  // namespace mpizip::kernels::reduce
