// What MPIZip reduces itself (kernels/reduce.h), in the MPI library's terms: the reduction type of
// a predefined MPI datatype and the op of a predefined MPI_Op, where MPI defines that op on that
// datatype. Everything else (user-defined ops and datatypes, derived datatypes, complex and long
// double types, the multi-language types MPI_AINT, MPI_OFFSET and MPI_COUNT, whose signedness the
// libraries' MIN and MAX disagree on, a pair MPI does not define) is none, and the call goes to
// the MPI library, which reduces it or reports the error it reports without MPIZip.
#pragma once

#include <mpi.h>

#include <optional>

#include "kernels/reduce.h"

namespace mpizip::core {

// The reduction (type, op) of a call with `type` and `op`, or none. The integer types map to the
// fixed-width type of their size and signedness (MPI_CHAR with the signedness of this compiler's
// char, as the MPI library's own loops treat it; MPI_C_BOOL and the byte types as unsigned bytes);
// MPIZIP_BF16 and MPIZIP_FP16 are the float types, though the MPI library knows them only as
// 16-bit integers. Which ops a datatype takes follows MPI's groups (MPI-4.1, 6.9.2): C integers
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

}  // namespace mpizip::core
