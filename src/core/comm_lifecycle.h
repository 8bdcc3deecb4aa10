// Communicator creation and release: the MPI call, then the protocol's collective setup of the new
// communicator (protocol_attach), or its detachment before the MPI library frees it. Same contracts
// as the MPI functions they stand for.
#pragma once

#include <mpi.h>

namespace mpizip::core {

int comm_dup(MPI_Comm comm, MPI_Comm* newcomm);
int comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm);
int comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm);
int comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm);
int comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm);
int comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm);
int comm_free(MPI_Comm* comm);

}  // namespace mpizip::core
