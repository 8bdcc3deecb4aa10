// src/transport/ucx.h for builds without UCX.
#include "src/transport/ucx.h"

namespace mpizip::transport {

Status create_ucx(MPI_Comm, const Options&, const NodeMap&, std::unique_ptr<Transport>*) {
  return Status::kUnsupported;
}

Status create_ucx(MPI_Comm, const Options&, std::unique_ptr<Transport>*) {
  return Status::kUnsupported;
}

void shutdown_ucx() {}

}  // namespace mpizip::transport
