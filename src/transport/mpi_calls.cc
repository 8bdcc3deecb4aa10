#include "src/transport/mpi_calls.h"

#include "src/platform/log.h"

namespace mpizip::transport {

Status mpi_status(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::kOk;
  char text[MPI_MAX_ERROR_STRING] = "unknown error";
  int length = 0;
  (void)PMPI_Error_string(rc, text, &length);
  MPIZIP_INFO("%s failed: %s", what, text);
  return Status::mpi(rc);
}

void cancel_and_wait(MPI_Request* req, bool receive) {
  if (*req == MPI_REQUEST_NULL) return;
  if (receive) (void)PMPI_Cancel(req);
  (void)PMPI_Wait(req, MPI_STATUS_IGNORE);
}

}  // namespace mpizip::transport
