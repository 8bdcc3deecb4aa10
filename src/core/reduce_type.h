// What MPIZip reduces itself (kernels/reduce.h), in the MPI library's terms: the reduction type of
// a predefined MPI datatype and the op of a predefined MPI_Op, where MPI defines that op on that
// datatype. Everything else (user-defined ops and datatypes, derived datatypes, complex and long
// double types, the multi-language types MPI_AINT, MPI_OFFSET and MPI_COUNT, whose signedness the
// libraries' MIN and MAX disagree on, a pair MPI does not define) is none, and the call goes to
// the MPI library, which reduces it or reports the error it reports without MPIZip.
#pragma once

#include <mpi.h>

#include <optional>

#include "include/mpizip.h"
#include "kernels/reduce.h"

namespace mpizip::core {

// The reduction (type, op) of a call with `type` and `op`, or none. The integer types map to the
// fixed-width type of their size and signedness (MPI_CHAR with the signedness of this compiler's
// char, as the MPI library's own loops treat it; MPI_C_BOOL and the byte types as unsigned bytes);
// MPIZIP_BF16, MPIZIP_FP16, MPIZIP_FP8_E4M3 and MPIZIP_FP8_E5M2 are float types, though the MPI
// library knows them only as 16- and 8-bit integers (library_reduces). Which ops a datatype takes follows MPI's groups (MPI-4.1, 6.9.2): C integers
// (and MPI_CHAR, which OSU reduces and the MPI libraries reduce as an integer) take every op but
// MINLOC and MAXLOC; Fortran integers the arithmetic, MIN/MAX and bitwise ones; MPI_BYTE the
// bitwise ones; MPI_C_BOOL and MPI_CXX_BOOL the logical ones; floats the arithmetic ones and
// MIN/MAX; the pair types MINLOC and MAXLOC. The result is MPI's definition (C's operators on the
// C type, kernels/reduce.h), also where a library departs from it (tests/unit/reduce_types_test).
struct Reduction {
  kernels::reduce::Type type;
  kernels::reduce::Op op;
};
std::optional<Reduction> reduction_of(MPI_Datatype type, MPI_Op op);

// Whether the MPI library reduces elements of `t` with its predefined ops: every type but MPIZip's
// own float types (bf16, fp16, fp8), which it knows only as integers. Reductions of those that no
// engine of MPIZip's takes reach the MPI library with library_op's operation instead.
constexpr bool library_reduces(kernels::reduce::Type t) {
  using kernels::reduce::Type;
  return t != Type::kBf16 && t != Type::kFp16 && t != Type::kE4m3 && t != Type::kE5m2;
}

// The operation to give the MPI library for a reduction of `type` with `op`: `op` itself, except
// for a predefined op on one of MPIZip's own float types, where it is a user-defined operation of
// MPIZip's (created at MPI_Init, non-commutative, so that the library folds in rank order) that
// folds two operands as kernels/reduce.h does, each step rounded to the type. Call between
// library_ops_create and library_ops_free.
MPI_Op library_op_of_own_type(MPI_Datatype type, MPI_Op op);
inline MPI_Op library_op(MPI_Datatype type, MPI_Op op) {
  if (type != MPIZip_bf16 && type != MPIZip_fp16 && type != MPIZip_fp8_e4m3 && type != MPIZip_fp8_e5m2)
    [[likely]] return op;  // four compares on every reduction of a CPU job
  return library_op_of_own_type(type, op);
}
int library_ops_create();
void library_ops_free();

}  // namespace mpizip::core
