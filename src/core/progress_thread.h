// MPIZip's helper thread. It never calls MPI: MPIZip calls the MPI library only from the
// application's threads, at the thread level the application asked for (docs/DESIGN.md,
// "Progress"). What it advances is what moves without MPI and would otherwise wait for the
// application's next MPIZip call while the peer waits for it: MPIZip's own UCX worker and the UCX
// transfers on it (pieces beyond those in flight, staging copies), through
// transport::progress_all_without_mpi(). It runs only while MPIZip has operations under way
// (MPIZIP_PROGRESS_THREAD; on by default where the protocol is on), sleeping otherwise.
#pragma once

#include <atomic>

namespace mpizip::core {

// Starts the thread when MPIZIP_PROGRESS_THREAD asks for it / stops and joins it.
void progress_thread_start();
void progress_thread_stop();

// Wakes the thread: an operation was registered.
void progress_thread_notify();

// True while the thread runs.
extern std::atomic<bool> g_progress_thread_running;
inline bool progress_thread_running() {
  return g_progress_thread_running.load(std::memory_order_relaxed);
}

}  // namespace mpizip::core
