// The data path of the UCX transport (src/transport/ucx.h): what a communicator's transport shares
// with its transfers (Channel), and one send or receive (PieceTransfer).
//
// Wire tag. A ucp tag names one message completely, and receives match all of its 64 bits:
//
//   bits 63..48  context id (16 bits): the communicator's, agreed by its ranks when the transport
//                is created, and held by no other live UCX transport of any member process
//   bits 47..28  source rank (20 bits): the sender's rank in the communicator
//   bits 27..0   transfer tag (28 bits): the low 28 bits of the caller's tag
//
// Callers take transfer tags from a per-communicator counter and use a tag for one message per
// direction between two peers; the 28 bits wrap around, which is safe while fewer than 2^28
// transfers between two peers are outstanding at once. A context id returns to the process's pool
// when its transport is destroyed, so a message of that transport that was never received could
// match a later transport's receive: transports are destroyed once their transfers are complete.
//
// Pieces. A transfer of B bytes travels as B / 4 MiB + 1 messages under one tag: full pieces of
// 4 MiB, then a short one of B mod 4 MiB bytes (possibly 0). UCX matches the messages of one tag
// from one endpoint in the order they were sent, so the receiver posts 4 MiB receives in order and
// stops at the first short piece: that is how it learns the sender's size, whatever size it posted
// (receives it posted beyond the end are cancelled). Up to kHostLanes pieces are in flight at once.
// The layout does not depend on where either side's buffer lives, so a device sender and a host
// receiver agree, and no single UCX message exceeds 4 MiB, whatever the transfer's size.
//
// Truncation. The receiver's last piece (the posted size mod 4 MiB, possibly 0) is the only one
// that can be too small for what arrives. It is taken with a probe, which tells its length before
// it is received: when it does not fit, it lands in a scratch buffer and the part that fits is
// copied out, as MPI fills a truncated receive; the sender's further pieces are dropped, the
// transfer ends with kTruncated and the sender completes normally.
//
// Staging. When UCX cannot read device memory (ucp_context_query reports no CUDA memory type, as
// with the Debian and Ubuntu builds), device buffers move through host buffers of one piece each,
// two per transfer (double buffering): the sender copies piece k+1 to the host while piece k is on
// the wire, and the receiver copies piece k to the device while piece k+1 arrives. The buffers are
// pieces of the process's pinned pool (src/transport/staging.h, bounded by Options::staging_bytes);
// when the pool has none left, a transfer stages through pageable buffers of its own instead of
// waiting, so that no transfer waits for memory that another one, waiting for its peer, holds.
#pragma once

#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/platform/device.h"
#include "src/platform/status.h"
#include "src/transport/staging.h"
#include "src/transport/transport.h"
#include "src/transport/ucx_worker.h"

namespace mpizip::transport::ucx {

constexpr uint64_t kPieceBytes = StagingPool::kPieceBytes;  // 4 MiB: one pinned piece
constexpr int kHostLanes = 8;    // pieces in flight when UCX reads the buffer itself
constexpr int kStagedLanes = 2;  // pieces in flight through host buffers (double buffering)
constexpr int kRankBits = 20;    // wire tag: source rank
constexpr int kTagBits = 28;     // wire tag: transfer tag

class PieceTransfer;

// What one communicator's transport shares with its transfers (which may outlive the transport):
// the worker, the context id, the peers' addresses and endpoints, the staging pool and copy
// streams, and the list of unfinished transfers that Transport::progress() advances. Mutable state
// is guarded by the worker mutex.
class Channel {
 public:
  Channel(std::shared_ptr<Worker> worker, uint32_t context_id, int rank, int size,
          uint64_t staging_bytes)
      : worker_(std::move(worker)), context_id_(context_id), rank_(rank), addresses_(size),
        peers_(size, nullptr), same_node_(size, false), pool_(StagingPool::shared(staging_bytes)) {
    same_node_[rank] = true;
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  // Gives the endpoints and the context id back to the worker.
  ~Channel() {
    std::lock_guard<std::mutex> lock(worker_->mutex());
    std::vector<Peer*> used;
    for (Peer* p : peers_) {
      if (p != nullptr) used.push_back(p);
    }
    worker_->disconnect(used);
    worker_->release_id(context_id_);
  }

  Worker& worker() { return *worker_; }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  StagingPool& pool() { return *pool_; }

  // The wire tag of a message from `source` with the caller's `tag` (layout at the top).
  ucp_tag_t wire_tag(int source, uint64_t tag) const {
    return (static_cast<ucp_tag_t>(context_id_) << (kRankBits + kTagBits)) |
           (static_cast<ucp_tag_t>(source) << kTagBits) | (tag & ((ucp_tag_t{1} << kTagBits) - 1));
  }

  // The endpoint to `peer`, connected on first use. Requires the worker mutex.
  Status connect(int peer, Peer** out) {
    if (peers_[peer] == nullptr) MPIZIP_CHECK(worker_->connect(addresses_[peer], &peers_[peer]));
    *out = peers_[peer];
    return Status::kOk;
  }

  // The streams of staged transfers' copies, one per direction so that a send's copies do not
  // wait behind a receive's; created on the first staged transfer, on the device current then
  // (kNoDevice without a GPU). They leave the application's streams alone, except that a new
  // transfer's copies wait for the work queued so far on the legacy default stream, which may still
  // be writing the buffer (a cudaMemcpy from pageable memory returns before it lands). Require the
  // worker mutex.
  Status prepare_streams(bool receive) {
    for (platform::Stream* s : {&to_host_, &to_device_}) {
      if (s->get() == nullptr) MPIZIP_CHECK(s->create(platform::Stream::Order::kIndependent));
    }
    return (receive ? to_device_ : to_host_).wait_for_default_stream();
  }
  const platform::Stream& to_host() const { return to_host_; }
  const platform::Stream& to_device() const { return to_device_; }

  // Filled once by create_ucx(), read-only afterwards.
  void set_address(int peer, std::string address) { addresses_[peer] = std::move(address); }
  void set_same_node(int peer) { same_node_[peer] = true; }
  bool same_node(int peer) const { return same_node_[peer]; }

  // Unfinished transfers, for progress(). Require the worker mutex.
  void add(PieceTransfer* t) { active_.push_back(t); }
  void remove(PieceTransfer* t) { active_.erase(std::find(active_.begin(), active_.end(), t)); }
  void advance_all();

 private:
  std::shared_ptr<Worker> worker_;
  uint32_t context_id_;
  int rank_;
  std::vector<std::string> addresses_;  // worker address of each rank
  std::vector<Peer*> peers_;            // endpoint of each rank, once connected
  std::vector<bool> same_node_;
  std::shared_ptr<StagingPool> pool_;
  platform::Stream to_host_, to_device_;
  std::vector<PieceTransfer*> active_;
};

// One send or receive, moved as pieces through a few lanes. Piece p uses lane p % lanes; a lane
// carries one piece at a time through its states:
//   send:    kIdle -> [kCopying: device to host buffer] -> kReady -> kInFlight -> kIdle
//   receive: kIdle -> kInFlight -> kArrived -> [kCopying: host buffer to device] -> kIdle
// Sends are posted and receives delivered in piece order; everything runs under the worker mutex.
class PieceTransfer final : public Transfer {
 public:
  // `buf` holds `bytes` bytes (sends) or room for them (receives), in memory of type `memory`;
  // `staged`: device memory that moves through host buffers.
  PieceTransfer(std::shared_ptr<Channel> channel, Peer* peer, ucp_tag_t tag, bool receive,
                char* buf, uint64_t bytes, ucs_memory_type_t memory, bool staged);
  PieceTransfer(const PieceTransfer&) = delete;
  PieceTransfer& operator=(const PieceTransfer&) = delete;
  ~PieceTransfer() override;

  Status test(bool* done) override;
  uint64_t received_bytes() const override;

  // Moves the transfer as far as it goes without blocking. Requires the worker mutex.
  void advance();

 private:
  enum class State { kIdle, kCopying, kReady, kInFlight, kArrived };
  struct Lane {
    State state = State::kIdle;
    void* request = nullptr;       // kInFlight: the UCX request
    ucs_status_t result = UCS_OK;  // kArrived: how the receive completed
    uint64_t length = 0;           // kArrived: bytes the sender sent in the piece
    bool truncated = false;        // the last piece, too large: it arrives in `scratch_`
    // Staged transfers: the lane's host buffer (`host`), a piece of the pinned pool or, when the
    // pool had none left, pageable memory; and the event after its last copy.
    StagingPiece pinned;
    std::unique_ptr<char[]> pageable;
    char* host = nullptr;
    platform::Event copied;
  };

  Lane& lane(uint64_t piece) { return lanes_[piece % lanes_.size()]; }
  uint64_t offset(uint64_t piece) const { return piece * kPieceBytes; }
  uint64_t length(uint64_t piece) const { return std::min(kPieceBytes, bytes_ - offset(piece)); }

  void take_buffers();
  bool step_send();
  bool step_receive();
  void stage_out(uint64_t piece);
  bool ready(Lane& l);
  void post_send(uint64_t piece);
  void post_receive(uint64_t piece);
  bool claim_last();
  char* landing(uint64_t piece);
  void deliver(uint64_t piece);
  bool drain();
  bool settle_copy(Lane& l);
  void end();
  void fail(Status s);
  Status request_error(ucs_status_t s, const char* what);
  ucp_request_param_t request_param(ucs_memory_type_t memory, bool always_request) const;
  void finish();
  void abandon();

  std::shared_ptr<Channel> channel_;
  Worker& worker_;
  Peer* peer_;
  ucp_tag_t tag_;
  bool receive_;
  char* buf_;
  uint64_t bytes_;   // sends: the size; receives: the size posted
  uint64_t pieces_;  // sends: pieces to send; receives: the most that can arrive
  ucs_memory_type_t memory_;  // of what UCX reads or writes (host when staged)
  bool staged_;
  std::vector<Lane> lanes_;
  uint64_t started_ = 0;    // sends: pieces whose lane was taken
  uint64_t posted_ = 0;     // pieces handed to UCX
  uint64_t completed_ = 0;  // sends: pieces UCX finished sending
  uint64_t delivered_ = 0;  // receives: pieces whose arrival was handled, in order
  uint64_t received_ = 0;   // receives: bytes that arrived
  bool ended_ = false;      // receives: the short piece arrived; nothing more will
  bool draining_ = false;   // receives: truncated, and the sender's further pieces are dropped
  void* drain_request_ = nullptr;  // draining: the receive of the next piece into `scratch_`
  std::vector<char> scratch_;      // truncated receives: what does not fit
  bool done_ = false;
  Status error_ = Status::kOk;
};

}  // namespace mpizip::transport::ucx
