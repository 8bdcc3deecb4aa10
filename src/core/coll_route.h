// Collective entry points: each decides whether a call passes to the MPI library or runs one of
// MPIZip's collectives (coll/), and hands it over. The decision depends only on what every rank of
// the communicator shares (count, datatype, op, the communicator and the settings: DESIGN.md, D3),
// never on where a rank's buffers live; a rank whose buffers are elsewhere stages them itself.
// Same contracts as the MPI functions they stand for.
#pragma once

#include <mpi.h>

#include "src/core/settings.h"

namespace mpizip::core {

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm);
int iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               MPI_Comm comm, MPI_Request* request);

// MPI_Reduce_scatter_block and MPI_Allgather: MPIZip's intra-node collectives (coll/tma_coll.h)
// where they apply, else the MPI library with device buffers staged (src/core/coll_staging.h).
int routed_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int routed_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

// Whether communicators get the two-shot collectives' part of their context (comm_context.h),
// set up with the communicator, not at the first collective: non-blocking collectives on different
// communicators may start in different orders on different ranks, and a collective setup inside
// one of them could then wait for a rank busy in another. False for MPIZIP_ALLREDUCE=off in
// `st` (the communicator's settings, comm_hints.h).
bool coll_wanted(const Settings& st);

}  // namespace mpizip::core
