#include "src/core/errors.h"

#include "src/core/protocol.h"
#include "src/platform/log.h"

namespace mpizip::core {

int mpi_error(Status s) {
  switch (s) {
    case Status::kOk: return MPI_SUCCESS;
    case Status::kInvalidArgument: return MPI_ERR_ARG;
    case Status::kOutOfMemory: return MPI_ERR_NO_MEM;
    case Status::kCorruptStream: return corrupt_payload_error();
    case Status::kTruncated: return MPI_ERR_TRUNCATE;
    case Status::kTypeMismatch: return MPI_ERR_TYPE;
    default: return MPI_ERR_OTHER;
  }
}

int raise(MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS && comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

int raise(MPI_Comm comm, Status s, const char* what) {
  if (s == Status::kOk) return MPI_SUCCESS;
  MPIZIP_ERROR("%s: %s", what, status_string(s));
  return raise(comm, mpi_error(s));
}

}  // namespace mpizip::core
