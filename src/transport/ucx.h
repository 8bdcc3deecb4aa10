// The UCX transport: bytes between the ranks of one communicator over UCX ucp tag matching, for
// inter-node traffic (same-node peers work too, over whichever UCX transport reaches them).
//
// One ucp context and one worker serve the whole process; each communicator gets a context id
// (agreed collectively) that keeps its tags apart from every other communicator's. Device buffers
// go to UCX directly when UCX reports CUDA memory support, and are otherwise staged by the
// transport itself through the process's pinned staging pool (src/transport/staging.h, bounded by
// Options::staging_bytes), the device copy of one piece overlapping the network transfer of the
// previous one. Details of the wire layout and the staging pipeline: src/transport/ucx.cc.
#pragma once

#include <mpi.h>

#include <memory>

#include "src/platform/status.h"
#include "src/transport/transport.h"

namespace mpizip::transport {

// Builds the UCX transport of `comm`. Collective over `comm`: every rank calls it, and unless an
// MPI call fails, all ranks succeed or all fail. Starts the process's UCX worker on first use.
// kUnsupported when the build has no UCX, when `comm` has more than 2^20 ranks, or when no context
// id is free on every rank (65536 UCX transports alive in one process); kTransportError when UCX
// fails to start on some rank; kMpiError when an MPI call fails. `*out` is set only on success.
// `nodes`: the communicator's node map (transport.h); the form without it finds the map itself.
Status create_ucx(MPI_Comm comm, const Options& options, const NodeMap& nodes,
                  std::unique_ptr<Transport>* out);
Status create_ucx(MPI_Comm comm, const Options& options, std::unique_ptr<Transport>* out);

// Closes the process's UCX endpoints and destroys its worker and context (from MPI_Finalize, while
// MPI still runs). Transports and transfers that outlive it fail with kTransportError and release
// nothing of UCX's; a later create_ucx starts a new worker. No-op when UCX never started.
void shutdown_ucx();

}  // namespace mpizip::transport
