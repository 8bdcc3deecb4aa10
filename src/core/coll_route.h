// Collective entry points: each decides whether a call passes to the MPI library or runs one of
// MPIZip's collectives (coll/), and hands it over. The decision depends only on what every rank of
// the communicator shares (count, datatype, op, the communicator and the settings: DESIGN.md, D3),
// never on where a rank's buffers live; a rank whose buffers are elsewhere stages them itself.
// Same contracts as the MPI functions they stand for.
#pragma once

#include <mpi.h>

namespace mpizip::core {

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm);
int iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* request);

}  // namespace mpizip::core
