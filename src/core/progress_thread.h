// The progress thread: advances MPIZip's pending operations while the application computes or sits
// in an MPI call MPIZip does not intercept. Without it, a receive of a protocol datatype whose bulk
// payload is rendezvous could wait for the application's next MPIZip call, while the sender waits
// for that receive (e.g. the receiver in MPI_Barrier): MPI's own progress would have matched the
// posted receive. Needs MPI_THREAD_MULTIPLE from the MPI library.
#pragma once

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
bool progress_thread_running();

}  // namespace mpizip::core
