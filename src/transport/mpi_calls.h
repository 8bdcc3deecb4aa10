// The transports' MPI calls: what one returned, as a Status, and the end of a request left behind.
#pragma once

#include <mpi.h>

#include "src/platform/status.h"

namespace mpizip::transport {

// The MPI error `rc` of `what` as a status that keeps the code (Status::mpi), with an info line
// naming the call; kOk for MPI_SUCCESS. Every MPI call the transports make goes through it.
Status mpi_status(int rc, const char* what);

// Cancels `*req` if it is a receive MPI has not matched yet, and waits for it either way.
void cancel_and_wait(MPI_Request* req, bool receive);

}  // namespace mpizip::transport
