#include "src/core/reduce_type.h"

#include <climits>
#include <cstdint>

#include "include/mpizip.h"
#include "kernels/reduce_cpu.h"
#include "src/platform/log.h"
#include "src/core/type_signature.h"

namespace mpizip::core {
namespace {

using kernels::reduce::Op;
using kernels::reduce::Type;

// MPI's groups of datatypes for the predefined reductions (MPI-4.1, 6.9.2).
enum class Group { kFloat, kCInteger, kFortranInteger, kByte, kLogical, kPair };

bool op_in(Group g, Op o) {
  switch (g) {
    case Group::kFloat: return o == Op::kSum || o == Op::kProd || o == Op::kMin || o == Op::kMax;
    case Group::kCInteger: return o != Op::kMinloc && o != Op::kMaxloc;
    case Group::kFortranInteger:
      return o == Op::kSum || o == Op::kProd || o == Op::kMin || o == Op::kMax ||
             o == Op::kBand || o == Op::kBor || o == Op::kBxor;
    case Group::kByte: return o == Op::kBand || o == Op::kBor || o == Op::kBxor;
    case Group::kLogical: return o == Op::kLand || o == Op::kLor || o == Op::kLxor;
    case Group::kPair: return o == Op::kMinloc || o == Op::kMaxloc;
  }
  return false;
}

template <typename T>
constexpr Type integer_type() {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  constexpr bool s = static_cast<T>(-1) < static_cast<T>(0);
  switch (sizeof(T)) {
    case 1: return s ? Type::kI8 : Type::kU8;
    case 2: return s ? Type::kI16 : Type::kU16;
    case 4: return s ? Type::kI32 : Type::kU32;
    default: return s ? Type::kI64 : Type::kU64;
  }
}

// A signed or unsigned integer type of `bytes` bytes (Fortran's INTEGER kinds).
std::optional<Type> sized_integer(MPI_Datatype t, bool is_signed) {
  int size = 0;
  if (PMPI_Type_size(t, &size) != MPI_SUCCESS) return std::nullopt;
  switch (size) {
    case 1: return is_signed ? Type::kI8 : Type::kU8;
    case 2: return is_signed ? Type::kI16 : Type::kU16;
    case 4: return is_signed ? Type::kI32 : Type::kU32;
    case 8: return is_signed ? Type::kI64 : Type::kU64;
    default: return std::nullopt;
  }
}

struct Typed {
  Type type;
  Group group;
};

std::optional<Typed> classify(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return std::nullopt;
  // MPIZip's own float types first: they duplicate MPI_UINT16_T.
  if (t == MPIZip_bf16) return Typed{Type::kBf16, Group::kFloat};
  if (t == MPIZip_fp16) return Typed{Type::kFp16, Group::kFloat};
  if (t == MPIZip_fp8_e4m3) return Typed{Type::kE4m3, Group::kFloat};
  if (t == MPIZip_fp8_e5m2) return Typed{Type::kE5m2, Group::kFloat};
  if (t == MPI_FLOAT) return Typed{Type::kFp32, Group::kFloat};
  if (t == MPI_DOUBLE) return Typed{Type::kFp64, Group::kFloat};
  if (const Basic real = fortran_real(t); real != Basic::kOther)
    return Typed{real == Basic::kFloat ? Type::kFp32 : Type::kFp64, Group::kFloat};
  struct Row {
    MPI_Datatype t;
    Type type;
    Group group;
  };
  const Row c_rows[] = {
      {MPI_CHAR, integer_type<char>(), Group::kCInteger},
      {MPI_SIGNED_CHAR, Type::kI8, Group::kCInteger},
      {MPI_UNSIGNED_CHAR, Type::kU8, Group::kCInteger},
      {MPI_SHORT, integer_type<short>(), Group::kCInteger},
      {MPI_UNSIGNED_SHORT, integer_type<unsigned short>(), Group::kCInteger},
      {MPI_INT, integer_type<int>(), Group::kCInteger},
      {MPI_UNSIGNED, integer_type<unsigned>(), Group::kCInteger},
      {MPI_LONG, integer_type<long>(), Group::kCInteger},
      {MPI_UNSIGNED_LONG, integer_type<unsigned long>(), Group::kCInteger},
      {MPI_LONG_LONG_INT, integer_type<long long>(), Group::kCInteger},
      {MPI_UNSIGNED_LONG_LONG, integer_type<unsigned long long>(), Group::kCInteger},
      {MPI_INT8_T, Type::kI8, Group::kCInteger},
      {MPI_UINT8_T, Type::kU8, Group::kCInteger},
      {MPI_INT16_T, Type::kI16, Group::kCInteger},
      {MPI_UINT16_T, Type::kU16, Group::kCInteger},
      {MPI_INT32_T, Type::kI32, Group::kCInteger},
      {MPI_UINT32_T, Type::kU32, Group::kCInteger},
      {MPI_INT64_T, Type::kI64, Group::kCInteger},
      {MPI_UINT64_T, Type::kU64, Group::kCInteger},
      {MPI_BYTE, Type::kU8, Group::kByte},
      {MPI_C_BOOL, Type::kU8, Group::kLogical},
      {MPI_FLOAT_INT, Type::kFloatInt, Group::kPair},
      {MPI_DOUBLE_INT, Type::kDoubleInt, Group::kPair},
      {MPI_2INT, Type::k2Int, Group::kPair},
      {MPI_SHORT_INT, Type::kShortInt, Group::kPair},
  };
  for (const Row& r : c_rows)
    if (t == r.t) return Typed{r.type, r.group};
  // MPI_LONG_INT is {long, int}: MPIZip's pair of a 64-bit value (LP64).
  if (t == MPI_LONG_INT && sizeof(long) == 8) return Typed{Type::kLongInt, Group::kPair};
  if (t == MPI_CXX_BOOL && sizeof(bool) == 1) return Typed{Type::kU8, Group::kLogical};
  // Fortran's integers, where the library has them (a null handle otherwise, never a match: t is
  // not null here).
  for (MPI_Datatype f : {MPI_INTEGER, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8}) {
    if (f != MPI_DATATYPE_NULL && t == f) {
      if (auto it = sized_integer(t, true)) return Typed{*it, Group::kFortranInteger};
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<Op> op_of(MPI_Op op) {
  const struct {
    MPI_Op mpi;
    Op op;
  } rows[] = {{MPI_SUM, Op::kSum},       {MPI_PROD, Op::kProd},     {MPI_MIN, Op::kMin},
              {MPI_MAX, Op::kMax},       {MPI_LAND, Op::kLand},     {MPI_LOR, Op::kLor},
              {MPI_LXOR, Op::kLxor},     {MPI_BAND, Op::kBand},     {MPI_BOR, Op::kBor},
              {MPI_BXOR, Op::kBxor},     {MPI_MINLOC, Op::kMinloc}, {MPI_MAXLOC, Op::kMaxloc}};
  for (const auto& r : rows)
    if (op == r.mpi) return r.op;
  return std::nullopt;
}

}  // namespace

std::optional<Reduction> reduction_of(MPI_Datatype type, MPI_Op op) {
  if (op == MPI_OP_NULL) return std::nullopt;
  const auto o = op_of(op);
  if (!o) return std::nullopt;
  const auto t = classify(type);
  if (!t || !op_in(t->group, *o)) return std::nullopt;
  return Reduction{t->type, *o};
}

namespace {

// MPIZip's user-defined operations for its own float types, by op (SUM, PROD, MIN, MAX).
MPI_Op g_library_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

// inoutvec[i] = invec[i] (op) inoutvec[i], invec the lower ranks' operand (the operation is
// non-commutative): kernels/reduce.h's fold of two operands, rounded to the type.
template <Op O>
void library_fold(void* invec, void* inoutvec, int* len, MPI_Datatype* type) {
  const auto t = type ? classify(*type) : std::nullopt;
  if (!t || *len <= 0) {
    if (*len > 0) MPIZIP_LOG_ONCE(kError, "a reduction of MPIZip's float types reached an unknown datatype; result left unset");
    return;
  }
  const void* inputs[2] = {invec, inoutvec};
  kernels::cpu::reduce(t->type, O, inputs, 2, inoutvec, static_cast<uint64_t>(*len));
}

}  // namespace

MPI_Op library_op_of_own_type(MPI_Datatype type, MPI_Op op) {
  const auto r = reduction_of(type, op);
  if (!r || library_reduces(r->type)) return op;
  const int at = static_cast<int>(r->op) - static_cast<int>(Op::kSum);  // SUM, PROD, MIN, MAX
  if (at < 0 || at > 3 || g_library_ops[at] == MPI_OP_NULL) return op;
  return g_library_ops[at];
}

int library_ops_create() {
  MPI_User_function* fns[4] = {library_fold<Op::kSum>, library_fold<Op::kProd>,
                               library_fold<Op::kMin>, library_fold<Op::kMax>};
  for (int i = 0; i < 4; ++i) {
    const int rc = PMPI_Op_create(fns[i], 0, &g_library_ops[i]);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

void library_ops_free() {
  for (MPI_Op& op : g_library_ops)
    if (op != MPI_OP_NULL) PMPI_Op_free(&op);
}

}  // namespace mpizip::core
