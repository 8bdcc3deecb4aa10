// Point-to-point entry points: each decides whether a call passes straight to MPI or runs the
// MPIZip protocol (src/core/protocol.h says when), and hands it to p2p/. Same contracts as the MPI
// functions they stand for.
#pragma once

#include <mpi.h>

#include <memory>

#include "src/core/p2p_bare.h"
#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::core {

// The four calls latency-bound codes make most: a bare message with a host buffer (p2p_bare.h) is
// the MPI library's own call from here; every other goes to the *_any form.
int send_any(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int isend_any(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request);
int recv_any(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status);
int irecv_any(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request);
[[gnu::always_inline]] inline int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (bare_host(buf, count, type, dest)) [[likely]] {
    return PMPI_Send(buf, count, type, dest, tag, comm);
  }
  return send_any(buf, count, type, dest, tag, comm);
}
[[gnu::always_inline]] inline int isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                 MPI_Request* request) {
  if (bare_host(buf, count, type, dest)) [[likely]] {
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  }
  return isend_any(buf, count, type, dest, tag, comm, request);
}
[[gnu::always_inline]] inline int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                MPI_Status* status) {
  if (bare_host_receive(buf, count, type, source)) [[likely]] {
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
  }
  return recv_any(buf, count, type, source, tag, comm, status);
}
[[gnu::always_inline]] inline int irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                 MPI_Request* request) {
  if (bare_host_receive(buf, count, type, source)) [[likely]] {
    return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  }
  return irecv_any(buf, count, type, source, tag, comm, request);
}

int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
             MPI_Comm comm, MPI_Status* status);
int sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                     int recvtag, MPI_Comm comm, MPI_Status* status);
int send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request);
// Buffered and synchronous forms: the protocol for protocol datatypes (a receiver of one expects a
// match message), device buffers of other datatypes staged, the rest to the MPI library.
int bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request);
int bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
               MPI_Request* request);
int recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request* request);
int probe(int source, int tag, MPI_Comm comm, MPI_Status* status);
int iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status);
int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status);
int improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message,
            MPI_Status* status);
int mrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status);
int imrecv(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request);
// A standard send or a receive as an operation its caller owns and advances, not registered with
// the request engine, for MPIZip's own algorithms made of messages (src/core/coll_pairwise.h):
// *op, or, for a message that is the MPI library's own (plain or bare, host memory), *plain, MPI's
// request, which the caller tests with PMPI_Test. A send has done the work only its own rank can
// do (encoding, posting) when it returns. For communicators the application never probes
// (MPIZip's own duplicates): nothing probed is served first. kOk, or why it did not start.
Status start_send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  std::unique_ptr<platform::Operation>* op, MPI_Request* plain);
Status start_recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  std::unique_ptr<platform::Operation>* op, MPI_Request* plain);

// Whether `message` is a handle of MPIZip's own (a message a matched probe took on a protocol
// communicator), which the MPI library does not know: its MPI_Message_c2f would not take it.
bool held_message(MPI_Message message);

}  // namespace mpizip::core
