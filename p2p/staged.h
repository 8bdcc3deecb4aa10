// Device buffers of datatypes outside the protocol (MPI_INT, derived types, ...) under an MPI that
// cannot read GPU memory: each side stages through host memory on its own (no protocol needed, the
// message is the application's). The staged region is the datatype's span, from its true lower
// bound to the end of the last element, so derived datatypes keep their layout; a receive copies
// the span in first so that the gaps of a non-contiguous datatype keep the device's contents.
#pragma once

#include <mpi.h>

#include <memory>

#include "src/platform/operation.h"

namespace mpizip::p2p {

// Posts a staged send (MPI_Isend or MPI_Issend of a host copy). Returns an MPI error code.
int start_staged_send(const void* buf, int count, MPI_Datatype type, int dest, int tag,
                      MPI_Comm comm, bool synchronous, std::unique_ptr<platform::Operation>* op);
// Posts a staged receive; the data reaches the device buffer when the operation completes.
int start_staged_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                      std::unique_ptr<platform::Operation>* op);

}  // namespace mpizip::p2p
