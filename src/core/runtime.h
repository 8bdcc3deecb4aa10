// The MPIZip runtime: what happens at MPI_Init and MPI_Finalize, and whether MPIZip is active.
// A process that never initialises MPI never reaches any of this.
#pragma once

#include <atomic>

namespace mpizip::core {

// Handlers of MPI_Init, MPI_Init_thread and MPI_Finalize: call the MPI library, then start or stop
// MPIZip around it. They return the MPI library's result.
int mpi_init(int* argc, char*** argv);
int mpi_init_thread(int* argc, char*** argv, int required, int* provided);
int mpi_finalize();
// MPI_Query_thread: the level the application was granted (MPIZip may have asked the library for
// more, for its progress thread).
int mpi_query_thread(int* provided);

// True between a successful MPI_Init and MPI_Finalize, when MPIZIP_ENABLE is on.
extern std::atomic<bool> g_active;
inline bool active() { return g_active.load(std::memory_order_acquire); }

// True when this process has a GPU (set at MPI_Init): buffers can be device memory only then, so a
// process without one never asks the GPU runtime about a pointer.
extern std::atomic<bool> g_has_gpu;
inline bool process_has_gpu() { return g_has_gpu.load(std::memory_order_relaxed); }

// True when MPIZip has nothing to do in this process (disabled, or no protocol, no GPU and no
// statistics): every intercepted call goes straight to the MPI library. Before MPI_Init and after
// MPI_Finalize too. One load of a process-wide flag.
extern std::atomic<bool> g_bypass;
inline bool bypass() { return g_bypass.load(std::memory_order_relaxed); }
// The thread level MPI granted.
int thread_level();

}  // namespace mpizip::core
