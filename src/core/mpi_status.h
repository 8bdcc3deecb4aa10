// The parts of an MPI_Status that the standard hides behind calls: the byte count and the cancelled
// flag. Open MPI keeps them in public fields of its status, which its own MPI_Get_count and
// MPI_Status_set_elements_x read and write; MPIZip does the same there, because a small message's
// receive would otherwise spend a noticeable part of its time in those calls. Elsewhere (MPICH) the
// portable calls.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace mpizip::core {

#if defined(OPEN_MPI) && OPEN_MPI
inline uint64_t status_bytes(const MPI_Status& st) { return static_cast<uint64_t>(st._ucount); }
inline void status_set_bytes(MPI_Status* st, uint64_t bytes, bool cancelled) {
  st->_ucount = static_cast<size_t>(bytes);
  st->_cancelled = cancelled ? 1 : 0;
}
#else
inline uint64_t status_bytes(const MPI_Status& st) {
  MPI_Count n = 0;
  PMPI_Get_elements_x(&st, MPI_BYTE, &n);
  return n < 0 ? 0 : static_cast<uint64_t>(n);
}
inline void status_set_bytes(MPI_Status* st, uint64_t bytes, bool cancelled) {
  PMPI_Status_set_elements_x(st, MPI_BYTE, static_cast<MPI_Count>(bytes));
  PMPI_Status_set_cancelled(st, cancelled ? 1 : 0);
}
#endif

}  // namespace mpizip::core

namespace mpizip::core {

// The empty status MPI defines for a null or inactive request: source MPI_ANY_SOURCE, tag
// MPI_ANY_TAG, error MPI_SUCCESS, no elements, not cancelled. Every field is set: Open MPI's own
// completion calls leave MPI_ERROR as it was, so a caller would read whatever its stack held.
inline void status_set_empty(MPI_Status* st) {
  if (st == MPI_STATUS_IGNORE) return;
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = MPI_SUCCESS;
  status_set_bytes(st, 0, false);
}

}  // namespace mpizip::core
