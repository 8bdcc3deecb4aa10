/* A C-level PMPI tool of the kind MPIZip's C entry points are: it defines the C MPI_ functions a
 * Fortran program's calls would reach if the MPI library's Fortran layer called them, counts them,
 * and passes them on. Preloaded alone under a Fortran program by tests/fortran/layers.sh, its
 * counts show which layer that library's Fortran bindings call: all zero where they call the
 * library's PMPI_ functions directly (Open MPI), which is why libmpizip has Fortran entry points
 * of its own. The counts are printed at exit, since MPI_Finalize itself may not come through. */
#include <mpi.h>
#include <stdio.h>

static int n_init, n_send, n_recv, n_isend, n_wait, n_probe, n_allreduce, n_comm_dup, n_finalize;

int MPI_Init(int* argc, char*** argv) { ++n_init; return PMPI_Init(argc, argv); }
int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  ++n_send;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status* status) {
  ++n_recv;
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  ++n_isend;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}
int MPI_Wait(MPI_Request* request, MPI_Status* status) { ++n_wait; return PMPI_Wait(request, status); }
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  ++n_probe;
  return PMPI_Probe(source, tag, comm, status);
}
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  ++n_allreduce;
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) { ++n_comm_dup; return PMPI_Comm_dup(comm, newcomm); }
int MPI_Finalize(void) { ++n_finalize; return PMPI_Finalize(); }

__attribute__((destructor)) static void report(void) {
  fprintf(stderr,
          "c_layer_probe: MPI_Init=%d MPI_Send=%d MPI_Recv=%d MPI_Isend=%d MPI_Wait=%d "
          "MPI_Probe=%d MPI_Allreduce=%d MPI_Comm_dup=%d MPI_Finalize=%d\n",
          n_init, n_send, n_recv, n_isend, n_wait, n_probe, n_allreduce, n_comm_dup, n_finalize);
}
