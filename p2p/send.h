// The sender's side of the protocol: one match message on the application's communicator and tag,
// the payload inline or through the communicator's transport, compressed when the policy says so
// (docs/PROTOCOL.md). A compressed device buffer is sent with the split-send pipeline: the match
// message and the stream's raw part leave while the GPU still encodes the rest.
#pragma once

#include <functional>
#include <memory>

#include "p2p/channel.h"
#include "src/platform/operation.h"

namespace mpizip::p2p {

// MPI_Send, MPI_Ssend, MPI_Isend, MPI_Issend of a protocol datatype: prepares the payload and posts
// what can be posted before returning; the operation completes when every part has left the
// application's buffer and MPIZip's. `on_done` (may be empty) receives what the message cost and
// saved, once, when the operation completes.
// The operation is detachable (platform::Operation) once the application's buffer is no longer
// needed: every part is posted from MPIZip's memory (the match message is MPIZip's copy too) and,
// for a synchronous send, the match message has been matched; its completion then no longer waits
// for the receiver.
// MPI's send modes as the sender carries them out. A ready send is a standard one (MPI allows it).
enum class SendMode {
  kStandard,
  kSynchronous,  // the match message goes with MPI_Issend: complete once matched
  kBuffered,     // every byte is copied into MPIZip's memory first: complete without the receiver
};

// An error when nothing was posted (no operation then); a failure after the match message has
// left is the operation's: it completes with the error, and the receiver is told.
Status start_send(const Channel& ch, const UserBuffer& b, int dest, int tag, SendMode mode,
                  std::unique_ptr<platform::Operation>* op,
                  std::function<void(const Traffic&)> on_done);

}  // namespace mpizip::p2p
