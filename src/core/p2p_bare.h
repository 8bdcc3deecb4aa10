// The whole of MPIZip's path for a small message: the tests that send a message of at most the
// bare size (p2p/wire.h) with a host buffer straight to the MPI library, inline in the entry points
// (src/core/p2p_route.h) so that such a call costs a few loads and compares before the MPI
// library's own. Internal to src/core.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "p2p/probed_queue.h"
#include "src/core/mpi_beneath.h"
#include "src/core/protocol.h"
#include "src/core/runtime.h"
#include "src/core/stats.h"
#include "src/platform/device.h"

namespace mpizip::core {

// A device buffer outside the protocol: staged through host memory by each side, since the MPI
// library cannot read GPU memory. Inline, cheapest test first: a process without a GPU learns it
// from one load.
[[gnu::always_inline]] inline bool staged(const void* buf, int count, int peer) {
  if (!process_has_gpu() || count <= 0 || peer == MPI_PROC_NULL) [[likely]] return false;
  return platform::is_device_pointer(buf) && active() && !mpi_cuda_aware();
}

// A message of at most the bare size (p2p/wire.h), on any communicator and of any datatype: the
// MPI library's own call (staged where the buffer is device memory), whatever the signature, since
// a message that size never takes the protocol. Decided from the datatype's size alone, before
// anything else is looked up: this is all of MPIZip's own path for a small message. A receive
// while some communicator holds probed messages takes the longer way, which looks at its queue.
[[gnu::always_inline]] inline bool own_bare(int count, MPI_Datatype type, int peer) {
  if (!protocol_job_on() || count < 0 || peer == MPI_PROC_NULL || type == MPI_DATATYPE_NULL) {
    return false;
  }
  int size = 0;
  if (type == MPI_CHAR || type == MPI_BYTE) {
    size = 1;  // OSU's and mpi4py's buffers: no call into the library
  } else if (type == MPI_FLOAT || type == MPI_INT) {
    size = 4;
  } else if (type == MPI_DOUBLE) {
    size = 8;
  } else if (PMPI_Type_size(type, &size) != MPI_SUCCESS) {
    return false;
  }
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size) <= send_policy().bare_bytes;
}

// A bare message with a host buffer, statistics off: the MPI library's own call and nothing else.
[[gnu::always_inline]] inline bool bare_host(const void* buf, int count, MPI_Datatype type,
                                             int peer) {
  return own_bare(count, type, peer) && !stats_on() && !staged(buf, count, peer);
}

// The same for a receive, which must also find no probed message queued (a queued one is served
// first, in order).
[[gnu::always_inline]] inline bool bare_host_receive(const void* buf, int count, MPI_Datatype type,
                                                     int peer) {
  return bare_host(buf, count, type, peer) && !p2p::ProbedQueue::any_queued();
}

}  // namespace mpizip::core
