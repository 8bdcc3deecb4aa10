// When the MPIZip point-to-point protocol is on, and the communicator plumbing it needs.
//
// The job decides once, at MPI_Init, from facts every rank contributes (a GPU, host compression,
// MPIZIP_PROTOCOL), so every rank agrees; each communicator created afterwards through an
// intercepted call gets a private shadow duplicate for bulk payloads, created collectively right
// after the communicator itself. Whether a message uses the protocol then depends only on its
// datatype and its communicator, which sender and receiver share (docs/PROTOCOL.md).
#pragma once

#include <mpi.h>

#include <optional>

#include "kernels/format.h"
#include "p2p/channel.h"
#include "src/core/comm_hints.h"
#include "src/core/comm_state.h"
#include "src/core/settings.h"
#include "src/transport/transport.h"

namespace mpizip::core {

// Creates MPIZip's datatypes, attribute keys and error class (include/mpizip.h), which exist
// whether MPIZip is enabled or not. At MPI_Init.
int protocol_create_handles();
// Frees them, at MPI_Finalize (MPICH reports datatypes still allocated then).
void protocol_free_handles();

// Collective over MPI_COMM_WORLD, at MPI_Init: decides the job's protocol switch and the eager
// size, and sets up MPI_COMM_WORLD and MPI_COMM_SELF.
int protocol_setup_job();
// Frees what protocol_setup_job and protocol_attach created on live communicators.
void protocol_teardown_job();
extern bool g_job_on;
inline bool protocol_job_on() { return g_job_on; }

// Collective over `comm` (just created by the application): attaches the protocol when the job has
// it on. A no-op for MPI_COMM_NULL and inter-communicators.
int protocol_attach(MPI_Comm comm);

// The transport options the settings `st` ask for (MPIZIP_TRANSPORT, MPIZIP_EMU_*, ...): a
// communicator's, its hints included.
transport::Options transport_options(const Settings& st);
// Drops the communicator's reference to its context (comm_context.h), before the application's
// MPI_Comm_free; pending operations keep theirs.
void protocol_detach(MPI_Comm comm);

// How a message of `type` travels on `comm`: its signature's element type when that is a protocol
// element type (MPI_FLOAT, MPI_DOUBLE, MPI_UINT16_T and MPI_UINT8_T, the signatures of MPIZip's
// bf16, fp16 and fp8 datatypes), with the elements one item of `type` holds and whether they lie
// back to back (src/core/type_signature.h). Decided from the type signature, which MPI requires
// the two sides of a message to share, never from the handle. What 16- and 8-bit elements hold
// (MPIZip's datatype, or the communicator's MPIZIP_UINT16_ELEMENT / MPIZIP_UINT8_ELEMENT
// attribute) only decides whether the sender compresses. Every other signature takes the protocol
// as raw bytes. Empty for an empty signature, and when the communicator does not use the
// protocol.
struct ProtocolType {
  format::DType dtype;  // for 16- and 8-bit signatures whose element type is unknown: bf16 / e4m3
  uint64_t elems;       // elements per item of the datatype
  bool contiguous;      // elements back to back from the buffer's address, in signature order
  bool compressible;    // the element type is known (a sender may compress)
  bool bytes = false;   // another signature carried as raw bytes (dtype kE4m3, elems = its size)
};
std::optional<ProtocolType> protocol_type_of(CommState* s, MPI_Comm comm, MPI_Datatype type);
// The same, inline for the two datatypes of most float messages (a small message's whole cost
// counts).
inline std::optional<ProtocolType> protocol_type(CommState* s, MPI_Comm comm, MPI_Datatype type) {
  if (s == nullptr || !s->protocol.load(std::memory_order_acquire)) return std::nullopt;
  if (type == MPI_FLOAT) return ProtocolType{format::DType::kFp32, 1, true, true};
  if (type == MPI_DOUBLE) return ProtocolType{format::DType::kFp64, 1, true, true};
  return protocol_type_of(s, comm, type);
}

// The element type of `type` when it is one protocol element: protocol_type() with one element,
// back to back (the collectives' datatypes).
std::optional<format::DType> protocol_dtype(CommState* s, MPI_Comm comm, MPI_Datatype type);

// What the p2p layer needs to run the protocol on `s`.
p2p::Channel channel_of(CommState* s, MPI_Comm comm);

// The senders' policy (settings, the job's eager size, whether a progress thread runs), fixed at
// MPI_Init: protocol_setup_job() sets it and protocol_refresh_policy() updates it once the
// progress thread has started or not.
extern p2p::SendPolicy g_policy;
inline const p2p::SendPolicy& send_policy() { return g_policy; }
void protocol_refresh_policy();
// The senders' policy with the settings `st` (a communicator's, comm_hints.h) and the job's facts.
p2p::SendPolicy send_policy_for(const Settings& st);
// The senders' policy on the communicator of `s`: send_policy(), or the one its hints make.
inline const p2p::SendPolicy& comm_policy(const CommState* s) {
  const CommHints* h = s != nullptr ? s->hints.load(std::memory_order_acquire) : nullptr;
  return h != nullptr ? h->policy : send_policy();
}

// The error code MPIZip reports for a corrupt compressed payload (its own error class).
int corrupt_payload_error();
// The error code MPIZip reports on a rank whose operation failed because another rank's part of it
// failed (its own error class; that rank's log names the cause).
int peer_failed_error();

}  // namespace mpizip::core
