// The buffer the application attached for buffered sends (MPI_Buffer_attach), as MPIZip accounts
// for it. A buffered send that MPIZip runs itself (a protocol message, p2p/send.h) copies the
// payload into MPIZip's memory, not into the attached buffer; so that the application still meets
// MPI's rules, each one reserves what MPI would have taken from that buffer (MPI_Pack_size of its
// data plus MPI_BSEND_OVERHEAD) until the send is done, and fails with MPI_ERR_BUFFER, as MPI
// does, when the buffer has not that much left. MPI_Buffer_detach waits for those sends, as it
// waits for its own. The MPI library accounts separately for the buffered sends it runs (small
// messages, other datatypes): each side checks against the whole attached size.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "src/platform/operation.h"

namespace mpizip::core {

// Handlers of MPI_Buffer_attach and MPI_Buffer_detach; same contracts as the MPI functions.
int buffer_attach(void* buffer, int size);
int buffer_detach(void* buffer_addr, int* size);

// Reserves `bytes` of data (plus MPI_BSEND_OVERHEAD) of the attached buffer for one buffered send.
// MPI_SUCCESS and a reservation released when the last copy of *held goes, or MPI_ERR_BUFFER.
int bsend_reserve(uint64_t bytes, std::shared_ptr<const void>* held);

// `op` holding `held` until it is destroyed (a reservation outlives the send, in the background
// too).
std::unique_ptr<platform::Operation> hold_while_running(std::unique_ptr<platform::Operation> op,
                                                        std::shared_ptr<const void> held);

}  // namespace mpizip::core
