// Point-to-point entry points: each decides whether a call passes straight to MPI or runs the
// MPIZip protocol (src/core/protocol.h says when), and hands it to p2p/. Same contracts as the MPI
// functions they stand for.
#pragma once

#include <mpi.h>

namespace mpizip::core {

int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
          MPI_Request* request);
int issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
           MPI_Request* request);
int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
         MPI_Status* status);
int irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
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
// Whether `message` is a handle of MPIZip's own (a message a matched probe took on a protocol
// communicator), which the MPI library does not know: its MPI_Message_c2f would not take it.
bool held_message(MPI_Message message);

}  // namespace mpizip::core
