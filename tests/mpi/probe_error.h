/* What the MPI library's own probes leave in MPI_ERROR of a status preset to `preset`, for a
 * message from `peer` on `comm`: the value MPIZip's probes must leave too. Open MPI leaves the
 * field alone; MPICH's MPI_Probe and MPI_Iprobe set MPI_SUCCESS, its MPI_Mprobe and MPI_Improbe
 * leave it (for a message from another rank). `matched`: the matched probes. Asked with
 * PMPI_Probe / PMPI_Mprobe, which MPIZip does not intercept; `peer` must call it too. */
#pragma once
#include <mpi.h>

static inline int library_probe_error(int preset, int matched, int peer, MPI_Comm comm) {
  int out = 1, in = 0;
  MPI_Request r;
  MPI_Status st;
  MPI_Message m;
  PMPI_Isend(&out, 1, MPI_INT, peer, 0, comm, &r);
  st.MPI_ERROR = preset;
  if (matched) {
    PMPI_Mprobe(peer, 0, comm, &m, &st);
    PMPI_Mrecv(&in, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
  } else {
    PMPI_Probe(peer, 0, comm, &st);
    PMPI_Recv(&in, 1, MPI_INT, peer, 0, comm, MPI_STATUS_IGNORE);
  }
  PMPI_Wait(&r, MPI_STATUS_IGNORE);
  return st.MPI_ERROR;
}
