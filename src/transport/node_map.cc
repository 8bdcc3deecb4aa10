// transport::find_node_map (transport.h): where a communicator's ranks live, found once per
// communicator.
#include <vector>

#include "src/transport/device_ops.h"
#include "src/transport/transport.h"

namespace mpizip::transport {

// Collective: the split by machine (MPI_COMM_TYPE_SHARED) names each machine by its lowest rank;
// one gather tells every rank each rank's machine and whether it can use CUDA IPC.
Status find_node_map(MPI_Comm comm, NodeMap* out) {
  MPIZIP_CHECK(Status::mpi(PMPI_Comm_rank(comm, &out->rank)));
  MPIZIP_CHECK(Status::mpi(PMPI_Comm_size(comm, &out->size)));
  MPI_Comm node = MPI_COMM_NULL;
  MPIZIP_CHECK(
      Status::mpi(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)));
  int leader = out->rank;  // the node's lowest rank names the node
  const int rc = PMPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  (void)PMPI_Comm_free(&node);
  MPIZIP_CHECK(Status::mpi(rc));
  const int mine[2] = {leader, ipc_supported() ? 1 : 0};
  std::vector<int> all(2 * static_cast<size_t>(out->size));
  MPIZIP_CHECK(Status::mpi(PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm)));
  out->same_host.assign(out->size, 0);
  out->ipc.assign(out->size, 0);
  for (int p = 0; p < out->size; ++p) {
    out->same_host[p] = all[2 * p] == leader;
    out->ipc[p] = out->same_host[p] && all[2 * p + 1] != 0 && mine[1] != 0;
  }
  return Status::kOk;
}

}  // namespace mpizip::transport
