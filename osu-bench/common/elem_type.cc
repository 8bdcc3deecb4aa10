#include "osu-bench/common/elem_type.h"

#include <dlfcn.h>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

namespace osub {

namespace {

struct TypeInfo {
  ElemType type;
  std::string_view name;
  size_t size;
};

constexpr std::array<TypeInfo, 8> kTypes = {{
    {ElemType::kFloat, "float", 4},
    {ElemType::kDouble, "double", 8},
    {ElemType::kBf16, "bf16", 2},
    {ElemType::kFp16, "fp16", 2},
    {ElemType::kFp8E4M3, "fp8e4m3", 1},
    {ElemType::kFp8E5M2, "fp8e5m2", 1},
    {ElemType::kChar, "char", 1},
    {ElemType::kByte, "byte", 1},
}};

// A binary floating-point format narrower than fp32, described by its fields.
struct NarrowFormat {
  int total_bits;
  int mantissa_bits;
  int exponent_bias;
  uint32_t nan;         // the canonical NaN; the input's sign is dropped, as CUDA does
  uint32_t max_finite;  // encoding of the largest finite value, without sign
  bool saturate;        // overflow gives max_finite (true) or infinity, max_finite + 1 (false)
};

constexpr NarrowFormat kBf16 = {16, 7, 127, 0x7fff, 0x7f7f, false};
constexpr NarrowFormat kFp16 = {16, 10, 15, 0x7fff, 0x7bff, false};
constexpr NarrowFormat kE4M3 = {8, 3, 7, 0x7f, 0x7e, true};
constexpr NarrowFormat kE5M2 = {8, 2, 15, 0x7f, 0x7b, true};

// Rounds |x| to the format, to nearest even; returns the encoding without the sign bit.
uint32_t round_magnitude(float x, const NarrowFormat& f) {
  uint32_t bits = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
  int min_normal_exp = 1 - f.exponent_bias;
  if (std::fabs(x) < std::ldexp(1.0f, min_normal_exp)) {
    // Subnormal in the target: the encoding is |x| in units of the smallest subnormal, and the
    // product is exact in double, so nearbyint (round-to-nearest-even mode) rounds it once.
    double units = std::ldexp(double(std::fabs(x)), f.mantissa_bits - min_normal_exp);
    return uint32_t(std::nearbyint(units));
  }
  // Normal: drop the low mantissa bits with round-to-nearest-even; a carry moves into the
  // exponent, which is what rounding up to the next binade means. Then rebias the exponent.
  int shift = 23 - f.mantissa_bits;
  uint32_t half_minus_one = (1u << (shift - 1)) - 1;
  uint32_t rounded = (bits + half_minus_one + ((bits >> shift) & 1)) >> shift;
  uint32_t rebias = uint32_t(127 - f.exponent_bias) << f.mantissa_bits;
  return rounded - rebias;
}

uint32_t float_to_narrow(float x, const NarrowFormat& f) {
  if (std::isnan(x)) return f.nan;
  uint32_t sign = (std::bit_cast<uint32_t>(x) >> 31) << (f.total_bits - 1);
  uint32_t magnitude = round_magnitude(x, f);
  if (magnitude > f.max_finite) magnitude = f.saturate ? f.max_finite : f.max_finite + 1;
  return sign | magnitude;
}

template <typename Out>
void cast_with(std::span<const float> in, std::byte* out, Out (*convert)(float)) {
  for (size_t i = 0; i < in.size(); ++i) {
    Out v = convert(in[i]);
    std::memcpy(out + i * sizeof(Out), &v, sizeof(Out));
  }
}

}  // namespace

std::string_view elem_type_name(ElemType t) { return kTypes[size_t(t)].name; }

std::optional<ElemType> elem_type_from_name(std::string_view name) {
  // OSU 7 spells MPI's types with a prefix: -T mpi_char, mpi_float, mpi_double.
  if (name.substr(0, 4) == "mpi_") name.remove_prefix(4);
  for (const TypeInfo& info : kTypes)
    if (info.name == name) return info.type;
  return std::nullopt;
}

size_t elem_type_size(ElemType t) { return kTypes[size_t(t)].size; }

// MPIZip's datatype for a narrow float type when MPIZip is loaded (found at run time, so the same
// binary runs without it); MPI_DATATYPE_NULL otherwise. Valid after MPI_Init.
MPI_Datatype mpizip_type(const char* symbol) {
  auto* handle = static_cast<MPI_Datatype*>(dlsym(RTLD_DEFAULT, symbol));
  return handle != nullptr ? *handle : MPI_DATATYPE_NULL;
}

MpiType mpi_type_of(ElemType t) {
  struct Narrow {
    const char* symbol;
    const char* name;
    MPI_Datatype fallback;
    const char* fallback_name;
  };
  static const Narrow narrow[] = {
      {"MPIZip_bf16", "MPIZIP_BF16", MPI_UINT16_T, "MPI_UINT16_T"},
      {"MPIZip_fp16", "MPIZIP_FP16", MPI_UINT16_T, "MPI_UINT16_T"},
      {"MPIZip_fp8_e4m3", "MPIZIP_FP8_E4M3", MPI_UINT8_T, "MPI_UINT8_T"},
      {"MPIZip_fp8_e5m2", "MPIZIP_FP8_E5M2", MPI_UINT8_T, "MPI_UINT8_T"},
  };
  int k = -1;
  switch (t) {
    case ElemType::kFloat:
      return {MPI_FLOAT, "MPI_FLOAT", false};
    case ElemType::kDouble:
      return {MPI_DOUBLE, "MPI_DOUBLE", false};
    case ElemType::kChar:
      return {MPI_CHAR, "MPI_CHAR", true};
    case ElemType::kByte:
      return {MPI_BYTE, "MPI_BYTE", true};
    case ElemType::kBf16: k = 0; break;
    case ElemType::kFp16: k = 1; break;
    case ElemType::kFp8E4M3: k = 2; break;
    case ElemType::kFp8E5M2: k = 3; break;
  }
  if (k < 0) return {MPI_DATATYPE_NULL, "?", false};
  MPI_Datatype own = mpizip_type(narrow[k].symbol);
  if (own != MPI_DATATYPE_NULL) return {own, narrow[k].name, true};
  return {narrow[k].fallback, narrow[k].fallback_name, true};
}

uint16_t float_to_bf16(float x) { return uint16_t(float_to_narrow(x, kBf16)); }
uint16_t float_to_fp16(float x) { return uint16_t(float_to_narrow(x, kFp16)); }
uint8_t float_to_fp8e4m3(float x) { return uint8_t(float_to_narrow(x, kE4M3)); }
uint8_t float_to_fp8e5m2(float x) { return uint8_t(float_to_narrow(x, kE5M2)); }

void cast_from_float(ElemType t, std::span<const float> in, std::byte* out) {
  switch (t) {
    case ElemType::kFloat:
      std::memcpy(out, in.data(), in.size_bytes());
      return;
    case ElemType::kDouble: {
      for (size_t i = 0; i < in.size(); ++i) {
        double d = in[i];
        std::memcpy(out + i * sizeof d, &d, sizeof d);
      }
      return;
    }
    case ElemType::kBf16:
      cast_with(in, out, float_to_bf16);
      return;
    case ElemType::kFp16:
      cast_with(in, out, float_to_fp16);
      return;
    case ElemType::kFp8E4M3:
      cast_with(in, out, float_to_fp8e4m3);
      return;
    case ElemType::kFp8E5M2:
      cast_with(in, out, float_to_fp8e5m2);
      return;
    case ElemType::kChar:
    case ElemType::kByte:
      // The first bytes of the fp32 values: a byte buffer of float data.
      std::memcpy(out, in.data(), in.size());
      return;
  }
}

}  // namespace osub
