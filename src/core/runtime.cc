#include "src/core/runtime.h"

#include "src/core/mpi_beneath.h"

#include <mpi.h>

#include <cstdio>
#include <string>

#include "src/core/comm_state.h"
#include "src/core/progress_thread.h"
#include "src/core/requests.h"
#include "src/core/protocol.h"
#include "src/core/settings.h"
#include "src/core/stats.h"
#include "src/transport/ucx.h"
#include "src/platform/device.h"
#include "src/platform/buffers.h"
#include "src/platform/gpu_timing.h"
#include "src/platform/log.h"

namespace mpizip::core {

std::atomic<bool> g_bypass{true};
std::atomic<bool> g_active{false};
std::atomic<bool> g_has_gpu{false};

namespace {

int g_thread_level = MPI_THREAD_SINGLE;   // what the application was granted
int g_library_level = MPI_THREAD_SINGLE;  // what the MPI library granted MPIZip

void start() {
  const Settings& s = settings();
  log::set_level(static_cast<log::Level>(s.log));
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  log::set_rank(rank);
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
  platform::buffers_configure(s.staging_bytes, s.device_pool_bytes);
  g_stats_on.store(s.stats, std::memory_order_relaxed);
  platform::gpu_timing_enable(s.stats);
  g_has_gpu.store(platform::has_gpu(), std::memory_order_relaxed);
  {
    const CudaAwareness beneath = find_mpi_cuda_awareness(s.mpi_cuda_aware);
    set_mpi_cuda_aware(beneath.aware);
    MPIZIP_INFO("MPI library beneath %s device buffers (%s)%s",
                beneath.aware ? "takes" : "does not take", beneath.how.c_str(),
                beneath.aware ? ": device buffers outside MPIZip's paths pass to it unstaged" : "");
  }
  g_active.store(true, std::memory_order_release);
  if (protocol_setup_job() != MPI_SUCCESS) {
    MPIZIP_WARN("cannot set up the point-to-point protocol; point-to-point calls pass through");
    protocol_teardown_job();
  }
  if (protocol_job_on()) progress_thread_start();
  protocol_refresh_policy();
  g_bypass.store(!s.stats && !protocol_job_on() && !platform::has_gpu(), std::memory_order_release);
  MPIZIP_DEBUG("started, thread level %d (library %d)", g_thread_level, g_library_level);
}

// The MPI library is asked for the level the application asks for, nothing more: MPIZip calls it
// only from the application's threads (progress_thread.h), and Open MPI charges
// MPI_THREAD_MULTIPLE on every call of the process.
int init(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, &g_library_level);
  if (rc != MPI_SUCCESS) return rc;
  g_thread_level = g_library_level;
  if (provided != nullptr) *provided = g_thread_level;
  start();
  return rc;
}

}  // namespace

int mpi_init(int* argc, char*** argv) { return init(argc, argv, MPI_THREAD_SINGLE, nullptr); }

int mpi_init_thread(int* argc, char*** argv, int required, int* provided) {
  return init(argc, argv, required, provided);
}

int mpi_query_thread(int* provided) {
  *provided = g_thread_level;
  return MPI_SUCCESS;
}

// MPIZIP_STATS=1: the time this process spent in the GPU runtime's calls, per kind of call.
static void print_gpu_timing() {
  std::string line;
  for (const platform::GpuCallTime& t : platform::gpu_timing()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s calls=%llu us_per_call=%.2f", line.empty() ? "" : "; ",
                  platform::gpu_call_name(t.call), static_cast<unsigned long long>(t.calls),
                  static_cast<double>(t.ns) / 1e3 / static_cast<double>(t.calls));
    line += buf;
  }
  if (!line.empty()) log::report("stats", "GPU calls: %s", line.c_str());
}

int mpi_finalize() {
  // Detached sends end while the peers still progress (they are in MPI_Finalize too). Once every
  // rank is there, what is left only needs local progress, or waits for a receiver that will never
  // take it: a short grace (requests.h).
  if (active() && protocol_job_on()) background_drain(MPI_COMM_WORLD, 2.0);
  g_bypass.store(true, std::memory_order_release);
  progress_thread_stop();
  if (g_active.exchange(false, std::memory_order_acq_rel)) {
    if (g_stats_on.exchange(false)) {
      stats_print();
      print_gpu_timing();
    }
    protocol_teardown_job();
    comm_state_teardown();
    background_finish(2.0);
    // UCX endpoints are flushed and closed while the peers still progress (they are in
    // MPI_Finalize too); transports still alive fail their calls from now on.
    transport::shutdown_ucx();
  }
  protocol_free_handles();
  return PMPI_Finalize();
}

int thread_level() { return g_thread_level; }

}  // namespace mpizip::core
