// The progress thread: advances MPIZip's pending operations while the application computes or sits
// in an MPI call MPIZip does not intercept. Without it, a receive of a protocol datatype whose bulk
// payload is rendezvous could wait for the application's next MPIZip call, while the sender waits
// for that receive (e.g. the receiver in MPI_Barrier): MPI's own progress would have matched the
// posted receive. Needs MPI_THREAD_MULTIPLE from the MPI library, which makes every MPI call of the
// application dearer, so it runs only where it is needed (MPIZIP_PROGRESS_THREAD): elsewhere a send
// completes as soon as its payload sits in MPIZip's memory and is posted to MPI, which then moves
// it from inside any call, and the receiver posts its part when the application next calls MPIZip.
#pragma once

#include <atomic>

namespace mpizip::core {

// Whether MPI_Init should ask the MPI library for MPI_THREAD_MULTIPLE (MPIZIP_PROGRESS_THREAD, and
// whether this rank may run the protocol).
bool progress_thread_wanted();

// Starts the thread (when wanted and the library granted MPI_THREAD_MULTIPLE) / stops and joins it.
void progress_thread_start(int provided);
void progress_thread_stop();

// Wakes the thread: an operation was registered.
void progress_thread_notify();

// True while the thread runs: blocking calls may then block in MPI without stalling other
// operations.
extern std::atomic<bool> g_progress_thread_running;
inline bool progress_thread_running() {
  return g_progress_thread_running.load(std::memory_order_relaxed);
}

}  // namespace mpizip::core
