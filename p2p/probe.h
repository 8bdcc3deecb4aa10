// Probes on a protocol communicator. A probe must report what the application would see: the
// sender's element count, not the size of the match message. MPIZip takes the probed message out
// of MPI's matching with MPI_Mprobe/MPI_Mrecv, keeps it in the communicator's ProbedQueue, and
// reports from its header; the next matching receive takes it from there.
#pragma once

#include <memory>

#include "p2p/channel.h"
#include "p2p/probed_queue.h"
#include "src/platform/status.h"

namespace mpizip::p2p {

// MPI_Probe (blocking) and MPI_Iprobe. `*found` is 1 when a message matched.
Status probe(const Channel& ch, int source, int tag, bool blocking, int* found, ProbeResult* out);

// MPI_Mprobe and MPI_Improbe: like probe(), but the message leaves the queue for the caller.
Status mprobe(const Channel& ch, int source, int tag, bool blocking, int* found, ProbeResult* out,
           std::unique_ptr<ProbedMessage>* message);

// Delivers a probed plain message (sent with a non-protocol datatype) to a receive of a non-protocol
// datatype. kTypeMismatch when the message is an MPIZip message, kTruncated when it does not fit
// (the first bytes are delivered, as MPI does). `*delivered` is the bytes written.
Status receive_plain(const ProbedMessage& m, void* buf, int count, MPI_Datatype type, MPI_Comm comm,
                  uint64_t* delivered);

}  // namespace mpizip::p2p
