// The emulated link: a network link of a configured rate and latency, emulated on one machine so
// that the compression pipelines can be measured at a cluster's link-to-codec speed ratio
// (DESIGN.md, D4). The PMPI transport moves the bytes (over MPI for host buffers, device to device
// through CUDA IPC for device buffers) and holds each piece back until its time on the emulated
// link has come; this file is the link's clock.
//
// Model: one link per direction per pair of ranks, FIFO (Links::kPair), or one outgoing link per
// rank that every destination shares, as a NIC of its own per GPU is shared (Links::kRank: one
// clock for the whole process, across its communicators). Peers on the rank's own node (pretend
// nodes, MPIZIP_PRETEND_NODE_RANKS) are not paced: their bytes do not cross a network. A
// transfer reserves the link from
// start = max(now, when the link frees up) for bytes / rate; the sender sees it complete no
// earlier than start + bytes / rate, the receiver no earlier than that plus the latency. The bytes
// themselves move as fast as the machine moves them (a sender posts them at once, so that they
// move while it sits in calls MPIZip passes through; a receiver pulling over CUDA IPC copies each
// piece when its slot starts): the completion times are the link. A zero-byte transfer still pays the latency.
// Times are CLOCK_MONOTONIC, which every process of one machine shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mpizip::transport {

// Nanoseconds of CLOCK_MONOTONIC.
int64_t monotonic_ns();

// A transfer's reservation on the link, in CLOCK_MONOTONIC nanoseconds.
struct LinkSlot {
  bool paced = false;     // false: the transfer runs at full speed (the times are meaningless)
  int64_t start_ns = 0;   // the first byte goes on the link
  int64_t end_ns = 0;     // the last byte has left: start + bytes / rate
  int64_t arrive_ns = 0;  // the last byte has arrived: end + latency
  // When the byte at `offset` of this `bytes`-byte transfer goes on the link.
  int64_t release_ns(uint64_t offset, uint64_t bytes) const;
};

enum class Links { kPair, kRank };

// The virtual clocks of one rank's outgoing links (of one communicator).
class EmulatedLink {
 public:
  // `gbps`: rate in 10^9 bytes per second per direction (> 0); `latency_us` (>= 0) is added to
  // every transfer; `paced`: per rank of the communicator, whether its transfers cross the link
  // (not this rank's own node).
  EmulatedLink(double gbps, double latency_us, std::vector<uint8_t> paced, Links links);
  // Reserves the link to `peer` for `bytes`, after everything reserved on it before; an unpaced
  // slot for a peer of this rank's node.
  LinkSlot reserve(int peer, uint64_t bytes);
  // The rate of the link to `peer` in bytes/s; 0 for a peer of this rank's node (not paced).
  double rate(int peer) const {
    return peer >= 0 && static_cast<size_t>(peer) < paced_.size() && paced_[static_cast<size_t>(peer)]
               ? 1e9 / ns_per_byte_
               : 0;
  }

 private:
  double ns_per_byte_;
  int64_t latency_ns_;
  std::vector<uint8_t> paced_;
  Links links_;
  std::vector<int64_t> free_ns_;  // kPair, per destination: when its link is free again
};

}  // namespace mpizip::transport
