// The one error path: where an MPIZip failure becomes what the application sees. p2p/, coll/ and
// the transports return a Status (src/platform/status.h); here it becomes an MPI error code
// (mpi_error), is logged once (report), and goes to the communicator's error handler (raise), as
// the MPI library's own errors do: MPI_ERRORS_ARE_FATAL aborts, MPI_ERRORS_RETURN returns the
// code, a user handler is called. Every entry point of src/core reports and raises through these
// functions, once per failed call or completed operation.
#pragma once

#include <mpi.h>

#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::core {

// The MPI error code of a failure: the MPI library's own code for kMpiError (a failure MPIZip
// passes on), the class MPI names for the rest (MPI_ERR_TRUNCATE, MPI_ERR_TYPE, MPI_ERR_NO_MEM,
// MPI_ERR_ARG, ...), MPIZip's own codes for a corrupt compressed payload and for a failure of
// another rank's part (corrupt_payload_error, peer_failed_error: protocol.h), MPI_ERR_OTHER for
// MPIZip's internal, device, transport and timeout failures. MPI_SUCCESS for kOk.
int mpi_error(Status s);

// True when `s` says the message was longer than the receive buffer (MPIZip's or the library's).
bool is_truncation(Status s);

// mpi_error(s), with one log line "what: cause" when s is a failure: at error level for MPIZip's
// own failures, at info level for what the application caused and MPI itself reports without a
// word (truncation, a datatype mismatch, the MPI library's codes).
int report(Status s, const char* what);

// An operation's outcome, reported as above; `what` names the operation ("receive", "send"), and
// the line adds the peer and tag where the status has them.
int report(const platform::OpStatus& s, const char* what);

// Calls `comm`'s error handler with `rc` when it is an error (not on MPI_COMM_NULL); returns `rc`.
int raise(MPI_Comm comm, int rc);

// report(s, what), then raise.
int raise(MPI_Comm comm, Status s, const char* what);

}  // namespace mpizip::core
