// The progress thread: advances MPIZip's pending operations while the application computes or sits
// in an MPI call MPIZip does not intercept. Without it, a receive of a protocol datatype whose bulk
// payload is rendezvous could wait for the application's next MPIZip call, while the sender waits
// for that receive (e.g. the receiver in MPI_Barrier): MPI's own progress would have matched the
// posted receive. It calls MPI, so it needs MPI_THREAD_MULTIPLE from the MPI library, which makes
// every MPI call of the application dearer (Open MPI 4.1: about 0.35 us on a small message's
// one-way latency on the H200 machine, osu-bench/results/README.md), so it runs only where it is
// needed (MPIZIP_PROGRESS_THREAD): in processes with a GPU (device sends over CUDA IPC wait for
// their receiver; the split-send pipeline posts its parts as the GPU finishes them) and with the
// transports MPI does not drive. Elsewhere a send completes as soon as its payload sits in
// MPIZip's memory and is posted to MPI, which then moves it from inside any call, and the receiver
// posts its part when the application next calls MPIZip. A rank may not replace a blocking
// collective by its non-blocking form to progress meanwhile (MPI never matches the two forms), so
// the thread is what keeps MPI's progress rule across blocking collectives.
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
