// Element types of the benchmark buffers: names, sizes, the MPI datatype each travels as, and the
// software conversions from fp32 that fill them.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace osub {

// kChar and kByte (MPI_CHAR, OSU's default, and MPI_BYTE) carry the bytes of the same realistic
// fp32 data, as frameworks send tensors they have no MPI datatype for.
enum class ElemType { kFloat, kDouble, kBf16, kFp16, kFp8E4M3, kFp8E5M2, kChar, kByte };

std::string_view elem_type_name(ElemType t);
std::optional<ElemType> elem_type_from_name(std::string_view name);
size_t elem_type_size(ElemType t);  // bytes per element

// How a buffer of element type t is handed to MPI. The 2- and 1-byte float types have no MPI
// datatype in plain MPI, so they travel as unsigned integers of their width; this is the one place
// that chooses, so it can switch to MPIZip's datatype handles from include/mpizip.h.
struct MpiType {
  MPI_Datatype datatype;
  const char* name;         // as printed in the header, e.g. "MPI_UINT16_T"
  bool reduces_as_integer;  // MPI_SUM on this datatype is unsigned wrap-around addition
};
MpiType mpi_type_of(ElemType t);

// Conversions from fp32, bit-exact with CUDA's host conversions: round to nearest even, NaN to the
// canonical NaN CUDA returns. bf16 and fp16 overflow to infinity (IEEE); the fp8 types follow
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...): finite values and infinities beyond the largest
// finite value become that value (e4m3 +-448, e5m2 +-57344), NaN becomes 0x7f.
uint16_t float_to_bf16(float x);
uint16_t float_to_fp16(float x);
uint8_t float_to_fp8e4m3(float x);
uint8_t float_to_fp8e5m2(float x);

// Casts fp32 values into out (elem_type_size(t) * in.size() bytes).
void cast_from_float(ElemType t, std::span<const float> in, std::byte* out);

}  // namespace osub
