// transport::find_node_map (transport.h): where a communicator's ranks live, found once per
// communicator.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/platform/device.h"
#include "src/transport/device_ops.h"
#include "src/transport/transport.h"

namespace mpizip::transport {

// Collective: the split by machine (MPI_COMM_TYPE_SHARED) names each machine by its lowest rank;
// one gather tells every rank each rank's machine, whether it can use CUDA IPC, its GPU and
// whether that GPU runs several processes' work side by side (MPS).
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
  struct Rank {
    int leader;
    int ipc;
    int concurrent;
    char gpu[52];  // the GPU's identity (platform::current_gpu_identity), empty without one
  } mine{};
  mine.leader = leader;
  mine.ipc = ipc_supported() ? 1 : 0;
  mine.concurrent = platform::gpu_processes_concurrent() ? 1 : 0;
  std::snprintf(mine.gpu, sizeof mine.gpu, "%s", platform::current_gpu_identity().c_str());
  std::vector<Rank> all(static_cast<size_t>(out->size));
  MPIZIP_CHECK(Status::mpi(PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine,
                                          MPI_BYTE, comm)));
  out->same_host.assign(out->size, 0);
  out->ipc.assign(out->size, 0);
  out->time_sliced.assign(out->size, 0);
  for (int p = 0; p < out->size; ++p) {
    const Rank& r = all[static_cast<size_t>(p)];
    out->same_host[p] = r.leader == leader;
    out->ipc[p] = out->same_host[p] && r.ipc != 0 && mine.ipc != 0;
    out->time_sliced[p] = out->same_host[p] && mine.gpu[0] != 0 &&
                          std::strncmp(r.gpu, mine.gpu, sizeof mine.gpu) == 0 &&
                          (r.concurrent == 0 || mine.concurrent == 0);
  }
  return Status::kOk;
}

}  // namespace mpizip::transport
