// A datatype's type signature, as far as the point-to-point protocol needs it.
//
// MPI requires only that a message's sender and receiver use datatypes with the same type
// *signature* (the sequence of basic types), not the same datatype: n floats may leave as
// MPI_FLOAT and arrive as a vector, an indexed type, a struct of floats or a contiguous type of
// MPI_FLOAT. So whether a message uses the protocol is decided from the signature, never from the
// datatype handle: a datatype whose signature repeats one basic type takes the protocol exactly when
// that basic type does (docs/PROTOCOL.md).
#pragma once

#include <mpi.h>

#include <cstdint>

namespace mpizip::core {

// The basic type a datatype's signature repeats.
enum class Basic : uint8_t {
  kEmpty = 0,   // the empty signature (a datatype of size 0)
  kOther = 1,   // any other basic type, or a signature mixing several: `elems` counts its bytes
  kFloat = 2,   // MPI_FLOAT, and Fortran's MPI_REAL and MPI_REAL4 (4 bytes)
  kDouble = 3,  // MPI_DOUBLE, and Fortran's MPI_DOUBLE_PRECISION and MPI_REAL8 (8 bytes)
  kU16 = 4,     // MPI_UINT16_T, and MPIZIP_BF16 / MPIZIP_FP16 (duplicates of it)
  kU8 = 5,      // MPI_UINT8_T, and MPIZIP_FP8_E4M3 / MPIZIP_FP8_E5M2
};

struct TypeSignature {
  Basic basic = Basic::kOther;
  uint64_t elems = 0;       // elements of `basic` in one item of the datatype (kOther: bytes)
  // The elements of `count` items lie back to back from the buffer's address, in signature order
  // (MPI_FLOAT, a dup of it, a contiguous type of it, ...). Otherwise they are packed before a send
  // and unpacked after a receive.
  bool contiguous = false;
  // What the 16- or 8-bit elements hold, where the datatype says (an MPIZIP_ELEM_* value: built
  // from MPIZIP_BF16, ...; 0 when unknown). Not part of the signature, so never part of a
  // decision both sides make: it only tells the sender's codec what it compresses.
  uint8_t element = 0;
};

// Creates the datatype keyval under which signatures of derived datatypes are cached (copied by
// MPI_Type_dup, which keeps the signature). At MPI_Init, after MPIZip's own datatypes exist
// (MPIZIP_BF16, ...: derived datatypes to MPI, basic types to the protocol).
int type_signature_setup();

// kFloat or kDouble for Fortran's MPI_REAL, MPI_REAL4, MPI_DOUBLE_PRECISION and MPI_REAL8 by
// their size (IEEE binary32 and binary64 as every Fortran compiler MPI libraries support lays them
// out), kOther for any other datatype: a Fortran program's reals take the protocol and the
// collectives' engines as a C program's floats and doubles do.
Basic fortran_real(MPI_Datatype type);

// The signature of `type`. Predefined datatypes are recognised by handle; a derived datatype is
// decoded once (MPI_Type_get_envelope / MPI_Type_get_contents, recursively) and cached on it.
TypeSignature type_signature(MPI_Datatype type);

}  // namespace mpizip::core
