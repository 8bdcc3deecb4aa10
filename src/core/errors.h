// The one error path: where an MPIZip failure becomes what the application sees. A failure inside
// MPIZip is a Status (src/platform/status.h), turned into an MPI error code here (mpi_error), and an
// error code goes to the communicator's error handler here (raise), as the MPI library's own errors
// do: MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns the code, a user handler is called.
// Every entry point of src/core raises through these two functions.
#pragma once

#include <mpi.h>

#include "src/platform/status.h"

namespace mpizip::core {

// The MPI error code of a failure: the class MPI names for it (MPI_ERR_TRUNCATE, MPI_ERR_TYPE,
// MPI_ERR_NO_MEM, MPI_ERR_ARG, ...), MPIZip's own code for a corrupt compressed payload
// (MPIZip_error_corrupt), MPI_ERR_OTHER for the rest. MPI_SUCCESS for kOk.
int mpi_error(Status s);

// Calls `comm`'s error handler with `rc` when it is an error (not on MPI_COMM_NULL); returns `rc`.
int raise(MPI_Comm comm, int rc);

// The same for a Status, with one log line naming what failed and why.
int raise(MPI_Comm comm, Status s, const char* what);

}  // namespace mpizip::core
