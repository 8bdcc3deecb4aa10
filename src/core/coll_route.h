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

// The blocking collectives that MPIZip's intra-node engine runs (coll/tma_coll.h) where it applies
// (every rank of the communicator on one node with the engine on, the call at least
// MPIZIP_TMA_MIN_BYTES, a reduction MPIZip performs: src/core/reduce_type.h), else the MPI library
// with device buffers staged (src/core/coll_staging.h). A rank whose datatypes are not contiguous
// says so at the engine's entry, and every rank then passes the call on.
int routed_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int routed_reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                          MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int routed_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  int root, MPI_Comm comm);
int routed_scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                MPI_Comm comm);
int routed_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm);
int routed_iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                 MPI_Comm comm, MPI_Request* request);
int routed_iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Request* request);
int routed_bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
// MPI_Ireduce_scatter_block and MPI_Ireduce: between nodes, the two-shot's reduce-scatter (and
// reduce) as MPIZip's operation (the flat form, pieces compressed), where the blocking forms would
// take it; else staged.
int routed_ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                 MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request);
// MPI_Ireduce_scatter of equal counts between nodes: as MPI_Ireduce_scatter_block; else staged.
int routed_ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                           MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request* request);
int routed_ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                   int root, MPI_Comm comm, MPI_Request* request);
// MPI_Ibcast: between nodes, the two-shot's scatter-allgather broadcast as MPIZip's operation
// (the flat form, pieces of float types compressed), where MPI_Bcast would take it; else staged.
int routed_ibcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                  MPI_Request* request);
// MPI_Iallgather: between nodes, the two-shot's all-gather phase as MPIZip's operation (the flat
// form, float blocks compressed), where MPI_Allgather would take it; else staged.
int routed_iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request);
// MPI_Ialltoall: between nodes, the two-shot's reduce-scatter phase with each block placed, as
// MPIZip's operation (the flat form, float blocks compressed), where MPI_Alltoall would take it;
// else staged.
int routed_ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request);
int routed_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int routed_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
int routed_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int routed_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                      MPI_Comm comm);
int routed_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

// Whether communicators get the two-shot collectives' part of their context (comm_context.h),
// set up with the communicator, not at the first collective: non-blocking collectives on different
// communicators may start in different orders on different ranks, and a collective setup inside
// one of them could then wait for a rank busy in another. False for MPIZIP_ALLREDUCE=off in
// `st` (the communicator's settings, comm_hints.h).
bool coll_wanted(const Settings& st);

}  // namespace mpizip::core
