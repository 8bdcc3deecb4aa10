// Byte movers between the ranks of one communicator. The point-to-point protocol (p2p/) and the
// collectives (coll/) hand a transport contiguous byte ranges, in host or device memory, with a
// 64-bit tag that both sides agree on (the bulk tag of a match message, or a collective's sequence
// number); the transport moves them and reports completion. Matching is by (peer, tag) only: a tag
// is used for one message per direction between two peers, so transports need no ordering rules.
// The two sides of a transfer may hand over different memory kinds (a device buffer sent into a
// host buffer, and the reverse). A device buffer must hold its data when it is handed over (the
// work that produced it has completed), and receives its data by the time the receive completes.
//
// Implementations: PMPI on a private communicator (portable fallback), UCX ucp (inter-node), CUDA
// IPC (intra-node device buffers), and an emulated link paced to a configured rate (benchmarks on
// one machine). Which one a communicator uses is decided when its state is set up (src/core).
//
// Threads: the implementations assume that calls on one transport and on its transfers do not
// overlap in time; create() wraps the transport it returns so that they may (one mutex per
// transport, held by every call). Transfers are destroyed before their transport.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/platform/operation.h"
#include "src/platform/status.h"

namespace mpizip::transport {

enum class Memory { kHost, kDevice };

inline constexpr uint64_t kCollectiveTag = uint64_t{1} << 63;

// One posted send or receive. Completion is observed with test(); the buffer belongs to the
// transport until then. Destroying an incomplete transfer cancels it where the transport can, and
// otherwise waits for it (never leaves the transport writing into freed memory).
class Transfer {
 public:
  virtual ~Transfer() = default;
  // Advances the transfer without blocking. kOk with *done = true once the bytes have left the
  // buffer (send) or fully arrived (receive); an error status when the transfer failed (the peer
  // vanished, an endpoint error): the caller reports it through MPI, never hangs.
  virtual Status test(bool* done) = 0;
  // Bytes that arrived (receives; equal to the posted size unless the sender sent fewer).
  virtual uint64_t received_bytes() const { return 0; }
  // Sends: true while the bytes cannot move on without this side calling test() again (pieces
  // still to be staged and posted to MPI). A send that no longer needs its sender moves on inside
  // the MPI library (or without MPI: CUDA IPC, UCX with the helper thread), wherever the sender's
  // application sits meanwhile.
  virtual bool needs_sender() const { return false; }
  // Where the transfer stands, in a few words, for a log line about a collective that stopped
  // moving (empty where the transport says nothing).
  virtual std::string describe() const { return {}; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Every transport accepts Memory::kDevice where the process has a GPU (kNoDevice otherwise). True
  // when device bytes move without passing through host memory (CUDA IPC, a UCX that reads GPU
  // memory); false when the transport stages them through pinned host memory itself, overlapping
  // the copies with the wire. A caller that holds the data in host memory anyway saves a copy by
  // handing that over when this is false.
  virtual bool reaches_device_memory() const = 0;
  virtual Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                       std::unique_ptr<Transfer>* out) = 0;
  virtual Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
                       std::unique_ptr<Transfer>* out) = 0;
  // Drives every pending transfer once (for blocking waits: the application's thread).
  virtual void progress() {}
  // Drives what moves without calling MPI (a UCX worker and its transfers), for MPIZip's helper
  // thread, which never calls MPI (docs/DESIGN.md, "Progress"). Nothing for transports over MPI.
  virtual void progress_without_mpi() {}
  // Whether `peer` shares this rank's node (false for every peer under force_internode).
  virtual bool same_node(int peer) const = 0;
  // The rate of the link to `peer` in bytes/s where this transport knows it (the emulated link's
  // configured rate), else 0: the cost model (cost/model.h) then measures it.
  virtual double link_rate(int /*peer*/) const { return 0; }
  // True when a device send to `peer` completes without the receiver's MPIZip code by itself
  // (CUDA IPC with claim flags, node_flags.h: the receiver pulls, or the sender copies aside), so
  // that a caller need not first copy the payload into memory of its own. True also between
  // pretend nodes on one machine (force_internode), where the emulated link moves device bytes
  // over CUDA IPC.
  virtual bool device_sends_settle(int peer) const {
    (void)peer;
    return false;
  }
  // What the transport still moves for sends that are complete for their callers (a CUDA IPC
  // sender's copy of a buffer its receiver had not claimed in time, node_flags.h), handed over
  // before the transport is destroyed: the operation owns those bytes and completes once MPI has
  // sent them all, wherever the receiver is meanwhile. Null when there is nothing. Its owner
  // advances it from the calls that may call MPI (src/core: the request engine's background).
  virtual std::unique_ptr<platform::Operation> take_unsent() { return nullptr; }
};

enum class Kind { kAuto, kPmpi, kUcx, kEmulated };

struct Options {
  Kind kind = Kind::kAuto;       // auto: UCX when it starts, else PMPI
  bool force_internode = false;  // treat every rank as its own node (no CUDA IPC)
  double emu_gbps = 0;           // emulated link: rate in 10^9 bytes per second, per direction
  double emu_latency_us = 0;     // emulated link: added latency per transfer
  bool emu_link_per_rank = false;  // emulated link: one outgoing link per rank that every
                                   // destination shares (else one per pair of ranks)
  uint64_t staging_bytes = uint64_t{256} << 20;  // pinned host memory the transports of this
                                                 // process (PMPI, UCX) stage device buffers
                                                 // through, at most
  bool fail_ucx_start = false;   // test hook (MPIZIP_FAULT=ucx-start): UCX's worker fails to start
                                 // here (create_ucx still takes part in the agreement)
};

// Where the ranks of a communicator live, found once per communicator (find_node_map, collective):
// which ranks share this rank's machine (MPI_COMM_TYPE_SHARED), and which of those can map each
// other's device memory (CUDA IPC on both sides). Every rank of the communicator sees the same
// machines.
struct NodeMap {
  int rank = 0;
  int size = 0;
  std::vector<uint8_t> same_host;  // per rank: shares this rank's machine (this rank included)
  std::vector<uint8_t> ipc;        // per rank: ... and both ranks can use CUDA IPC
  bool one_node() const {
    for (uint8_t h : same_host) if (!h) return false;
    return true;
  }
};
Status find_node_map(MPI_Comm comm, NodeMap* out);

// Builds the transport of one communicator. Collective over `comm`, a private communicator (a
// duplicate of the application's) that the transport may use for its own messages; its error
// handler becomes MPI_ERRORS_RETURN, so that MPI errors come back as statuses. Every rank must pass
// the same options. Falls back to PMPI, with a one-time notice, when the requested transport cannot
// start. Details of the choice per peer: src/transport/transport.cc.
// `nodes` is the communicator's node map (the same ranks as `comm`); the form without it finds the
// map itself.
Status create(MPI_Comm comm, const Options& options, const NodeMap& nodes,
              std::unique_ptr<Transport>* out);
Status create(MPI_Comm comm, const Options& options, std::unique_ptr<Transport>* out);

// Calls progress_without_mpi() on every live transport of the process (those create() made) that
// no other thread is calling at the moment: the helper thread's one job.
void progress_all_without_mpi();

}  // namespace mpizip::transport
