#include "src/core/runtime.h"

#include <mpi.h>

#include "src/core/comm_state.h"
#include "src/core/protocol.h"
#include "src/core/settings.h"
#include "src/core/stats.h"
#include "src/platform/log.h"

namespace mpizip::core {
namespace {

std::atomic<bool> g_active{false};
int g_thread_level = MPI_THREAD_SINGLE;

void start(int provided) {
  const Settings& s = settings();
  log::set_level(static_cast<log::Level>(s.log));
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  log::set_rank(rank);
  g_thread_level = provided;
  if (protocol_create_handles() != MPI_SUCCESS) {
    MPIZIP_WARN("cannot create MPIZip's datatypes and attribute keys");
  }
  if (!s.enable) {
    MPIZIP_INFO("disabled by MPIZIP_ENABLE=0: every call passes through");
    return;
  }
  if (comm_state_setup() != MPI_SUCCESS) {
    MPIZIP_WARN("cannot create the communicator keyval; MPIZip passes every call through");
    return;
  }
  g_stats_on.store(s.stats, std::memory_order_relaxed);
  g_active.store(true, std::memory_order_release);
  if (protocol_setup_job() != MPI_SUCCESS) {
    MPIZIP_WARN("cannot set up the point-to-point protocol; point-to-point calls pass through");
    protocol_teardown_job();
  }
  MPIZIP_DEBUG("started, thread level %d", provided);
}

}  // namespace

int mpi_init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) {
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    start(provided);
  }
  return rc;
}

int mpi_init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) start(*provided);
  return rc;
}

int mpi_finalize() {
  if (g_active.exchange(false, std::memory_order_acq_rel)) {
    if (g_stats_on.exchange(false)) stats_print();
    protocol_teardown_job();
    comm_state_teardown();
  }
  return PMPI_Finalize();
}

bool active() { return g_active.load(std::memory_order_acquire); }
int thread_level() { return g_thread_level; }

}  // namespace mpizip::core
