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
    // Asleep while nothing it can advance is under way (receives that are the MPI library's own,
    // watched by the completion calls, are not its work).
    if (!helper_work()) {
      g_cv.wait(lock, [] { return g_stop || helper_work(); });
      continue;
    }
    lock.unlock();
    transport::progress_all_without_mpi();
    // Poll gently: the application's own MPIZip calls progress at full speed; this thread only has
    // to keep what moves without MPI moving while the application is elsewhere.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
  }
}

}  // namespace

void progress_thread_start() {
  const Settings& s = settings();
  if (!s.enable || s.progress_thread == 2 || g_progress_thread_running.load()) return;
  g_stop = false;
  // hwloc's topology is loaded here, on the application's thread inside MPI_Init, not by the new
  // thread: that load reads the machine's devices for milliseconds, and the new thread starts on
  // the rank's own core (it inherits the launcher's binding), so loading there would take that
  // core from the application's first messages.
  const std::string gpu = platform::current_gpu_pci_bus_id();
  if (!gpu.empty()) (void)platform::topology();
  g_thread = std::thread(run, gpu);
  g_progress_thread_running.store(true);
  MPIZIP_DEBUG("helper thread started (it never calls MPI)");
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
  // Only when there is work of its kind: a wake-up that finds none costs the application a
  // futex call and, on a busy core, a context switch per request.
  if (!g_progress_thread_running.load(std::memory_order_relaxed) || !helper_work()) return;
  // The thread's predicate (helper_work()) changed before this call, outside g_mutex. Passing
  // through the mutex orders that change with the thread's check: either the thread has not yet
  // checked (and will see it), or it is already waiting (and gets the notification).
  { std::lock_guard<std::mutex> lock(g_mutex); }
  g_cv.notify_one();
}

}  // namespace mpizip::core
