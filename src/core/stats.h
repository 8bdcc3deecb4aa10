// Statistics (MPIZIP_STATS=1): calls and bytes per entry point and communicator, printed at
// MPI_Finalize. Counting costs one predictable branch per call when off.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>

#include "src/core/comm_state.h"

namespace mpizip::core {

// True while statistics are being collected (set at MPI_Init from MPIZIP_STATS).
extern std::atomic<bool> g_stats_on;

inline bool stats_on() { return g_stats_on.load(std::memory_order_relaxed); }

// Records one call of `site` on `comm` (MPI_COMM_NULL: no communicator) moving `bytes`.
void stats_record(const CallSite& site, MPI_Comm comm, uint64_t bytes);

// count x size of datatype, 0 for a negative count or an invalid type.
uint64_t bytes_of(int64_t count, MPI_Datatype type);

// One line per communicator that saw calls. Collective over nothing: each rank prints its own.
void stats_print();

}  // namespace mpizip::core
