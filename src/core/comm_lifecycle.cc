// Communicator creation and release (comm_lifecycle.h).
#include "src/core/comm_lifecycle.h"

#include "src/core/coll_deferred.h"
#include "src/core/comm_hints.h"
#include "src/core/comm_state.h"
#include "src/core/protocol.h"
#include "src/core/runtime.h"

namespace mpizip::core {
namespace {

// The MPI call that creates a communicator, then the protocol's collective setup of the new one.
int created(int rc, MPI_Comm* newcomm) {
  return rc == MPI_SUCCESS && active() ? protocol_attach(*newcomm) : rc;
}

}  // namespace

int comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  return created(PMPI_Comm_dup(comm, newcomm), newcomm);
}

int comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
  // The info's hints, not the parent's, before MPIZip sets the communicator up with them.
  if (rc == MPI_SUCCESS) comm_hints_from_info(*newcomm, info);
  return created(rc, newcomm);
}

int comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  return created(PMPI_Comm_split(comm, color, key, newcomm), newcomm);
}

int comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  return created(PMPI_Comm_split_type(comm, split_type, key, info, newcomm), newcomm);
}

int comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  return created(PMPI_Comm_create(comm, group, newcomm), newcomm);
}

int comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  return created(PMPI_Comm_create_group(comm, group, tag, newcomm), newcomm);
}

int comm_free(MPI_Comm* comm) {
  if (active() && comm != nullptr) {
    // Non-blocking calls deferred on it start first (coll_deferred.h): MPI_Comm_free is
    // collective, so every rank has made them.
    if (CommState* s = comm_state_find(*comm); s != nullptr && s->context) (void)deferred_drain(*s->context);
    protocol_detach(*comm);
  }
  return PMPI_Comm_free(comm);
}

}  // namespace mpizip::core
