// The v-collectives whose counts no rank knows all of (MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv,
// MPI_Scatterv, and their non-blocking forms; and large float MPI_Allgatherv, MPI_Gather,
// MPI_Scatter) as MPIZip point-to-point messages, one a block (the direct pairwise algorithm of
// Open MPI's basic components): each block travels on a private duplicate of the communicator that
// runs MPIZip's protocol, so that float blocks between nodes travel compressed (split-send), device
// blocks of one node move over CUDA IPC (one copy, no host staging), and a rank needs only its own
// arguments: no agreement round between nodes, whatever memory each rank's buffers are in. Within
// one node, where on host buffers a message a block costs more than the library's own
// shared-memory alltoallv (2.7x at 4-256 bytes on 2 ranks), a blocking call first asks every rank
// whether the buffers it uses are device memory (one small allreduce; host compression counts
// host buffers as device ones, as everywhere in coll/): all yes, the blocks move as messages
// (CUDA IPC, one copy each); else the MPI library's call. A non-blocking call within one node
// cannot wait for that answer and passes on (device buffers staged).
//
// Every rank of a communicator takes this route or none, from facts they share: MPIZip's protocol
// on the communicator (the job's switch: a GPU or host compression on some rank), an
// intra-communicator whose ranks span several nodes (its node map; pretend nodes and
// MPIZIP_FORCE_INTERNODE count) or, within one node, the blocking call's answer above,
// MPIZIP_PAIRWISE (agreed), MPI_IN_PLACE for an alltoallv or alltoallw (which MPI
// asks of every rank alike; such calls are passed on), and the duplicate's setup (collective, by
// the first blocking such call on the communicator, since a non-blocking call must not wait for its
// peers: non-blocking ones before it pass on; where a rank could not set it up, every rank passes
// the calls on from then). Blocks of zero bytes send nothing, as the MPI library's own pairwise
// algorithms do.
//
// Each function answers none where the route is not taken: the caller passes the call on (the MPI
// library, device buffers staged: src/core/coll_staging.h).
#pragma once

#include <mpi.h>

#include <optional>

namespace mpizip::core {

// `request` null: the blocking call, every message waited for, the first failing message's error
// the call's. Else the non-blocking call: the messages are one operation behind *request, which
// the application's wait or test completes (posted at once, so nothing waits for this rank's
// later calls but its own receives: docs/DESIGN.md, "Progress").
std::optional<int> pairwise_alltoallv(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request);
// Displacements in bytes, a datatype per block (MPI_Alltoallw).
std::optional<int> pairwise_alltoallw(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], const MPI_Datatype sendtypes[],
                                      void* recvbuf, const int recvcounts[], const int rdispls[],
                                      const MPI_Datatype recvtypes[], MPI_Comm comm,
                                      MPI_Request* request);
std::optional<int> pairwise_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, const int recvcounts[], const int displs[],
                                    MPI_Datatype recvtype, int root, MPI_Comm comm,
                                    MPI_Request* request);
std::optional<int> pairwise_scatterv(const void* sendbuf, const int sendcounts[],
                                     const int displs[], MPI_Datatype sendtype, void* recvbuf,
                                     int recvcount, MPI_Datatype recvtype, int root,
                                     MPI_Comm comm, MPI_Request* request);

// MPI_Gather and MPI_Scatter (and their non-blocking forms) the same way, as the v-forms' messages,
// where their blocks are of a protocol element type (compressed between nodes) and the P blocks
// together at least MPIZIP_ALLREDUCE_MIN_BYTES: every rank decides alike, since MPI requires every
// block's signature to be the root's. Smaller ones go to the MPI library's tree.
std::optional<int> pairwise_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                   MPI_Comm comm, MPI_Request* request);
std::optional<int> pairwise_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void* recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                                    MPI_Comm comm, MPI_Request* request);

// MPI_Allgatherv (and MPI_Iallgatherv) the same way, every rank's block to every other rank, where
// the blocks are of a protocol element type and together at least MPIZIP_ALLREDUCE_MIN_BYTES (every
// rank knows every count). MPI_Allgatherv within one node tries MPIZip's intra-node engine first.
std::optional<int> pairwise_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void* recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request);

// The entry points, blocking and not: the pairwise route where it is taken, else the MPI
// library's call (device buffers staged).
int routed_iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm, MPI_Request* request);
int routed_igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Request* request);
int routed_iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    MPI_Request* request);
int routed_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int routed_ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                      const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                      MPI_Request* request);
int routed_alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                     const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                     const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int routed_ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[],
                      const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                      const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                      MPI_Request* request);
int routed_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                   MPI_Comm comm);
int routed_igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                    MPI_Comm comm, MPI_Request* request);
int routed_scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                    MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                    int root, MPI_Comm comm);
int routed_iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                     MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, MPI_Request* request);

}  // namespace mpizip::core
