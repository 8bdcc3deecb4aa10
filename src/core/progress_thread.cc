#include "src/core/progress_thread.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "src/core/requests.h"
#include "src/core/settings.h"
#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/platform/topology.h"
#include "src/transport/transport.h"

namespace mpizip::core {

std::atomic<bool> g_progress_thread_running{false};

namespace {

std::thread g_thread;
std::mutex g_mutex;
std::condition_variable g_cv;
bool g_stop = false;

void run(std::string gpu) {
  // Near the GPU whose work it advances (hwloc): the copies it starts and the events it polls.
  if (!gpu.empty() && platform::bind_thread_near(gpu)) {
    MPIZIP_DEBUG("progress thread bound to the cores nearest GPU %s", gpu.c_str());
  }
  std::unique_lock<std::mutex> lock(g_mutex);
  while (!g_stop) {
    if (request_count() == 0) {
      g_cv.wait(lock, [] { return g_stop || request_count() != 0; });
      continue;
    }
    lock.unlock();
    progress();
    // Poll gently: the application's own MPIZip calls progress at full speed; this thread only has
    // to keep operations moving while the application is elsewhere.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
  }
}

}  // namespace

bool progress_thread_wanted() {
  const Settings& s = settings();
  if (!s.enable || s.progress_thread == 2 || s.protocol == 2) return false;
  if (s.progress_thread == 1) return true;
  // Host buffers over the MPI library's transport need no thread: a send completes once its
  // payload is posted from MPIZip's memory (p2p/send.h), and MPI moves it from inside any call.
  // The GPU pipeline, CUDA IPC (a sender waits for its receiver to copy) and the transports MPI
  // does not drive (UCX, the paced emulated link) do.
  const auto kind = static_cast<transport::Kind>(s.transport);
  if (kind == transport::Kind::kUcx || kind == transport::Kind::kEmulated) return true;
  std::string why;
  return !platform::gpus(&why).empty();
}

void progress_thread_start(int provided) {
  if (!progress_thread_wanted()) return;
  if (provided < MPI_THREAD_MULTIPLE) {
    MPIZIP_LOG_ONCE(kWarn, "no progress thread: the MPI library did not grant MPI_THREAD_MULTIPLE; "
                           "operations advance inside MPIZip's calls only");
    return;
  }
  g_stop = false;
  g_thread = std::thread(run, platform::current_gpu_pci_bus_id());
  g_progress_thread_running.store(true);
  MPIZIP_DEBUG("progress thread started");
}

void progress_thread_stop() {
  if (!g_progress_thread_running.exchange(false)) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_stop = true;
  }
  g_cv.notify_all();
  g_thread.join();
}


void progress_thread_notify() {
  if (!g_progress_thread_running.load(std::memory_order_relaxed)) return;
  // The thread's predicate (request_count()) changed before this call, outside g_mutex. Passing
  // through the mutex orders that change with the thread's check: either the thread has not yet
  // checked (and will see it), or it is already waiting (and gets the notification).
  { std::lock_guard<std::mutex> lock(g_mutex); }
  g_cv.notify_one();
}

}  // namespace mpizip::core
