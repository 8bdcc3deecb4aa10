#include "src/core/errors.h"

#include <cstdio>

#include "src/core/protocol.h"
#include "src/platform/log.h"

namespace mpizip::core {

int mpi_error(Status s) {
  switch (s.code()) {
    case Status::kOk: return MPI_SUCCESS;
    case Status::kMpiError: return s.mpi_code() != MPI_SUCCESS ? s.mpi_code() : MPI_ERR_OTHER;
    case Status::kInvalidArgument: return MPI_ERR_ARG;
    case Status::kOutOfMemory: return MPI_ERR_NO_MEM;
    case Status::kCorruptStream: return corrupt_payload_error();
    case Status::kPeerFailed: return peer_failed_error();
    case Status::kTruncated: return MPI_ERR_TRUNCATE;
    case Status::kTypeMismatch: return MPI_ERR_TYPE;
    default: return MPI_ERR_OTHER;
  }
}

bool is_truncation(Status s) {
  if (s == Status::kTruncated) return true;
  if (s != Status::kMpiError) return false;
  int error_class = MPI_SUCCESS;
  return PMPI_Error_class(s.mpi_code(), &error_class) == MPI_SUCCESS &&
         error_class == MPI_ERR_TRUNCATE;
}

namespace {

// What the application caused, which MPI reports through the error code alone.
bool application_caused(Status s) {
  return s == Status::kTruncated || s == Status::kTypeMismatch || s == Status::kMpiError;
}

void log_failure(Status s, const char* what, const char* where) {
  const auto level = application_caused(s) ? log::Level::kInfo : log::Level::kError;
  if (!log::enabled(level)) return;
  if (s == Status::kMpiError) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (PMPI_Error_string(s.mpi_code(), text, &len) != MPI_SUCCESS) len = 0;
    text[len] = '\0';
    log::write(level, "%s%s: %s", what, where, len > 0 ? text : status_string(s));
  } else {
    log::write(level, "%s%s: %s", what, where, status_string(s));
  }
}

}  // namespace

int report(Status s, const char* what) {
  if (ok(s)) return MPI_SUCCESS;
  log_failure(s, what, "");
  return mpi_error(s);
}

int report(const platform::OpStatus& s, const char* what) {
  if (ok(s.error)) return MPI_SUCCESS;
  char where[64] = "";
  if (s.source >= 0) std::snprintf(where, sizeof where, " (rank %d, tag %d)", s.source, s.tag);
  log_failure(s.error, what, where);
  return mpi_error(s.error);
}

int raise(MPI_Comm comm, int rc) {
  if (rc != MPI_SUCCESS && comm != MPI_COMM_NULL) PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

int raise(MPI_Comm comm, Status s, const char* what) { return raise(comm, report(s, what)); }

}  // namespace mpizip::core
