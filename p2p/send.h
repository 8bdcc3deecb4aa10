// The sender's side of the protocol: one match message on the application's communicator and tag,
// the payload inline or as a bulk message on the shadow communicator, compressed when the policy
// says so (docs/PROTOCOL.md).
#pragma once

#include <memory>
#include <vector>

#include "p2p/channel.h"
#include "p2p/wire.h"
#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::p2p {

// One outgoing message, ready for the wire.
struct Outgoing {
  std::vector<uint8_t> match;    // header, followed by the payload when inline
  const uint8_t* bulk = nullptr; // payload when bulk: the user's buffer or `storage`
  uint64_t bulk_bytes = 0;
  int bulk_tag = 0;
  std::vector<uint8_t> storage;  // compressed or staged payload
  Traffic traffic;
};

// Builds the match message and payload of `b` (compressing or staging as the policy says). Errors
// of the codec or the staging copy are reported as a status; the caller decides.
Status prepare_send(const Channel& ch, const UserBuffer& b, Outgoing* out);

// MPI_Send, MPI_Ssend, MPI_Isend, MPI_Issend: the payload is prepared and every message posted before this returns; the
// operation completes when MPI has completed them.
int start_send(const Channel& ch, const UserBuffer& b, int dest, int tag, bool synchronous,
               std::unique_ptr<platform::Operation>* op, Traffic* traffic);

// MPI_Send / MPI_Ssend with blocking MPI calls. Only for callers whose other operations advance
// elsewhere meanwhile (a progress thread): a blocked call advances nothing else.
int send_blocking(const Channel& ch, const UserBuffer& b, int dest, int tag, bool synchronous,
                  Traffic* traffic);

// Posts `bytes` bytes as one or more messages (1 GiB each) with the same tag; FIFO order on a
// (source, tag) pair keeps them in sequence for the receiver's matching posts.
int post_bulk(const void* buf, uint64_t bytes, int peer, int tag, MPI_Comm comm, bool send,
              std::vector<MPI_Request>* reqs);

}  // namespace mpizip::p2p
