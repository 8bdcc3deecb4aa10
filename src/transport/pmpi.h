// The PMPI transport: bytes over the underlying MPI library, on the transport's private
// communicator. Device buffers are staged through pinned host memory (segments.h) or, between ranks
// of one node, pulled through CUDA IPC (ipc.h); transfers can be paced to an emulated link
// (emulated.h). create() (transport.h) sets it up three ways: the portable fallback (kind pmpi),
// the node-local transport (CUDA IPC on), and the emulated link (kind emulated).
//
// Protocol, for a transfer of tag t from S to R:
//  1. S -> R, header (sent by isend(), so host data never waits for R): the byte count, how the
//     bytes come (inline or IPC), the transfer's slot on the emulated link, and for IPC the
//     description of S's device buffer.
//  2. inline: S -> R, the bytes as ceil(bytes / 4 MiB) segments (segments.h); R posts them when
//     the header has arrived.
//     IPC: R maps S's buffer, copies out of it into its own (device or host) memory, and answers
//     R -> S "fin: pulled"; S's transfer completes on it. If R cannot map the buffer, the fin asks
//     for the bytes inline, and they follow as above. Where the header names a claim slot
//     (node_flags.h), the two race for it instead: R claims it and pulls (the slot says so, no
//     fin), or S, its receiver late, moves the bytes into host memory of its own and sends them as
//     segments (R takes them once the slot says kMoved, and frees the slot).
// The two sides may hand over different memory kinds: only S decides how the bytes come (IPC only
// from device memory, to a peer for which IPC is on), and the header tells R.
//
// MPI tags. The message's role (header, segment, fin) and the 64-bit tag t make the MPI tag
// (t mod n) * 3 + role, with n = (MPI_TAG_UB + 1) / 3, so tags above MPI_TAG_UB are fine. The
// messages of one transfer share a tag and are told apart by role and by MPI's non-overtaking
// order; two transfers are told apart by their tags, which callers allocate from a
// per-communicator counter: the tags of the transfers outstanding between two ranks at one time
// differ by less than n (n is 10922 at the least MPI allows, 715827882 where MPI_TAG_UB is
// 2^31 - 1), so they map to distinct MPI tags.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/transport/emulated.h"
#include "src/transport/transport.h"

namespace mpizip::transport {

struct PmpiConfig {
  std::string name = "pmpi";           // what name() answers
  std::vector<uint8_t> same_node;      // per peer: what same_node() answers
  std::vector<uint8_t> ipc;            // per peer: device buffers may be pulled through CUDA IPC
  std::shared_ptr<EmulatedLink> link;  // paces every transfer; null: full speed
  bool device_direct = false;          // what reaches_device_memory() answers: IPC with every peer
                                       // this transport serves
  uint64_t staging_bytes = 0;          // bound of the process's pinned staging pool (staging.h)
};

// Builds a PMPI transport on `comm` (not collective: create() gathers what `config` says about the
// peers). Reads MPI_TAG_UB from `comm`.
Status create_pmpi(MPI_Comm comm, PmpiConfig config, std::unique_ptr<Transport>* out);

}  // namespace mpizip::transport
