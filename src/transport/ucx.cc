// The UCX transport (src/transport/ucx.h): ucp tag matching on the process's worker
// (src/transport/ucx_worker.h), with a context id per communicator and transfers cut into pieces.
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
// receiver agree, and no single UCX message exceeds 4 MiB, whatever the transfer's size. A receive
// too small for the message drops the pieces that do not fit and ends with kTruncated; the sender
// completes normally.
//
// Staging. When UCX cannot read device memory (ucp_context_query reports no CUDA memory type, as
// with the Debian and Ubuntu builds), device buffers move through host buffers of one piece each,
// two per transfer (double buffering): the sender copies piece k+1 to the host while piece k is on
// the wire, and the receiver copies piece k to the device while piece k+1 arrives. The buffers are
// pieces of the process's pinned pool (src/transport/staging.h, bounded by Options::staging_bytes);
// when the pool has none left, a transfer stages through pageable buffers of its own instead of
// waiting, so that no transfer waits for memory that another one, waiting for its peer, holds.
//
// Endpoints are created on first use of a peer, by sends and receives alike: a receive needs the
// endpoint so that UCX reports the peer's failure (error handling mode peer), which then fails the
// receive with kTransportError instead of leaving it posted forever. UCX 1.13 moves data only over
// transports that detect a peer's failure in that mode (TCP, InfiniBand), not over its
// shared-memory ones: same-node peers are better served by CUDA IPC.
#include "src/transport/ucx.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "src/platform/device.h"
#include "src/platform/log.h"
#include "src/transport/staging.h"
#include "src/transport/ucx_worker.h"

namespace mpizip::transport {
namespace {

constexpr uint64_t kPieceBytes = StagingPool::kPieceBytes;  // 4 MiB: one pinned piece
constexpr int kHostLanes = 8;    // pieces in flight when UCX reads the buffer itself
constexpr int kStagedLanes = 2;  // pieces in flight through host buffers (double buffering)
constexpr int kRankBits = 20;
constexpr int kTagBits = 28;
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

class PieceTransfer;

// What one communicator's transport shares with its transfers (which may outlive the transport):
// the worker, the context id, the peers' addresses and endpoints, the staging pool and copy
// streams, and the list of unfinished transfers that Transport::progress() advances. Mutable state
// is guarded by the worker mutex.
class Channel {
 public:
  Channel(std::shared_ptr<ucx::Worker> worker, uint32_t context_id, int rank, int size,
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
    std::vector<ucx::Peer*> used;
    for (ucx::Peer* p : peers_) {
      if (p != nullptr) used.push_back(p);
    }
    worker_->disconnect(used);
    worker_->release_id(context_id_);
  }

  ucx::Worker& worker() { return *worker_; }
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  StagingPool& pool() { return *pool_; }

  // The wire tag of a message from `source` with the caller's `tag` (layout at the top).
  ucp_tag_t wire_tag(int source, uint64_t tag) const {
    return (static_cast<ucp_tag_t>(context_id_) << (kRankBits + kTagBits)) |
           (static_cast<ucp_tag_t>(source) << kTagBits) | (tag & ((ucp_tag_t{1} << kTagBits) - 1));
  }

  // The endpoint to `peer`, connected on first use. Requires the worker mutex.
  Status connect(int peer, ucx::Peer** out) {
    if (peers_[peer] == nullptr) MPIZIP_CHECK(worker_->connect(addresses_[peer], &peers_[peer]));
    *out = peers_[peer];
    return Status::kOk;
  }

  // The streams of staged transfers' copies, one per direction so that a send's copies do not
  // wait behind a receive's; created on the first staged transfer, on the device current then
  // (kNoDevice without a GPU). Require the worker mutex.
  Status prepare_streams() {
    if (to_host_.get() == nullptr) MPIZIP_CHECK(to_host_.create());
    if (to_device_.get() == nullptr) MPIZIP_CHECK(to_device_.create());
    return Status::kOk;
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
  std::shared_ptr<ucx::Worker> worker_;
  uint32_t context_id_;
  int rank_;
  std::vector<std::string> addresses_;  // worker address of each rank
  std::vector<ucx::Peer*> peers_;       // endpoint of each rank, once connected
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
  PieceTransfer(std::shared_ptr<Channel> channel, ucx::Peer* peer, ucp_tag_t tag, bool receive,
                char* buf, uint64_t bytes, ucs_memory_type_t memory, bool staged)
      : channel_(std::move(channel)), worker_(channel_->worker()), peer_(peer), tag_(tag),
        receive_(receive), buf_(buf), bytes_(bytes), pieces_(bytes / kPieceBytes + 1),
        memory_(memory), staged_(staged),
        lanes_(std::min<uint64_t>(staged ? kStagedLanes : kHostLanes, pieces_)) {
    if (staged_) take_buffers();
    channel_->add(this);
  }
  PieceTransfer(const PieceTransfer&) = delete;
  PieceTransfer& operator=(const PieceTransfer&) = delete;
  ~PieceTransfer() override;

  Status test(bool* done) override {
    std::lock_guard<std::mutex> lock(worker_.mutex());
    if (!done_) {
      if (!worker_.closed()) worker_.progress();
      advance();
    }
    *done = done_;
    return done_ ? error_ : Status::kOk;
  }

  uint64_t received_bytes() const override {
    std::lock_guard<std::mutex> lock(worker_.mutex());
    return received_;
  }

  // Moves the transfer as far as it goes without blocking. Requires the worker mutex.
  void advance() {
    if (done_) return;
    if (worker_.closed()) return abandon();
    if (error_ == Status::kOk && peer_->failed) fail(Status::kTransportError);
    for (bool moved = true; moved;) moved = receive_ ? step_receive() : step_send();
    bool idle = !draining_ && std::all_of(lanes_.begin(), lanes_.end(), [](const Lane& l) {
      return l.state == State::kIdle;
    });
    bool complete = receive_ ? ended_ : completed_ == pieces_;
    if (idle && (complete || error_ != Status::kOk)) finish();
  }

 private:
  enum class State { kIdle, kCopying, kReady, kInFlight, kArrived };
  struct Lane {
    State state = State::kIdle;
    void* request = nullptr;       // kInFlight: the UCX request
    ucs_status_t result = UCS_OK;  // kArrived: how the receive completed
    uint64_t length = 0;           // kArrived: bytes the sender sent in the piece
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
  void deliver(uint64_t piece);
  bool drain();
  bool settle_copy(Lane& l);
  void end();
  void fail(Status s);
  Status request_error(ucs_status_t s, const char* what);
  ucp_request_param_t request_param(bool receive, ucs_memory_type_t memory) const;
  void finish();
  void abandon();

  std::shared_ptr<Channel> channel_;
  ucx::Worker& worker_;
  ucx::Peer* peer_;
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
  std::vector<char> scratch_;
  bool done_ = false;
  Status error_ = Status::kOk;
};

// Destroying an unfinished transfer: receives still posted are cancelled and no further piece of a
// send is posted, then the transfer waits for what UCX and the copy streams still hold (a send that
// the peer never receives keeps it waiting until the endpoint fails). The mutex is released between
// rounds so that other threads keep communicating.
PieceTransfer::~PieceTransfer() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(worker_.mutex());
      if (!done_) {
        if (error_ == Status::kOk) fail(Status::kTransportError);
        if (!worker_.closed()) worker_.progress();
        advance();
      }
      if (done_) {
        channel_->remove(this);
        return;
      }
    }
    std::this_thread::yield();
  }
}

// Staged transfers: gives each lane a host buffer, pinned from the pool while it has pieces left,
// else pageable and no larger than the transfer's largest piece.
void PieceTransfer::take_buffers() {
  for (Lane& l : lanes_) {
    if (channel_->pool().acquire(&l.pinned) == Status::kOk) {
      l.host = static_cast<char*>(l.pinned.data());
    } else {
      MPIZIP_LOG_ONCE(kInfo, "UCX: the pinned staging pool is in use; staging device buffers "
                             "through pageable memory meanwhile");
      l.pageable.reset(new char[std::min(kPieceBytes, bytes_)]);
      l.host = l.pageable.get();
    }
  }
}

// One round of a send: collect finished pieces, start the next pieces whose lane is free, post the
// ready ones in order. True when something moved.
bool PieceTransfer::step_send() {
  bool moved = false;
  for (Lane& l : lanes_) {
    if (l.state == State::kInFlight) {
      ucs_status_t s = ucp_request_check_status(l.request);
      if (s == UCS_INPROGRESS) continue;
      ucp_request_free(l.request);
      l.request = nullptr;
      l.state = State::kIdle;
      if (s == UCS_OK) {
        ++completed_;
      } else {
        fail(request_error(s, "tag send"));
      }
      moved = true;
    } else if (l.state == State::kCopying && error_ != Status::kOk) {
      moved |= settle_copy(l);
    } else if (l.state == State::kReady && error_ != Status::kOk) {
      l.state = State::kIdle;
      moved = true;
    }
  }
  while (error_ == Status::kOk && started_ < pieces_ && lane(started_).state == State::kIdle) {
    stage_out(started_++);
    moved = true;
  }
  while (error_ == Status::kOk && posted_ < started_ && ready(lane(posted_))) {
    post_send(posted_++);
    moved = true;
  }
  return moved;
}

// Puts piece `piece` of a send where UCX will read it: in place, or copied to the lane's buffer.
void PieceTransfer::stage_out(uint64_t piece) {
  Lane& l = lane(piece);
  l.state = State::kReady;
  if (!staged_ || length(piece) == 0) return;
  Status s = platform::copy_async(l.host, buf_ + offset(piece), length(piece), channel_->to_host());
  if (s == Status::kOk) s = l.copied.record(channel_->to_host());
  if (s != Status::kOk) {
    l.state = State::kIdle;
    return fail(s);
  }
  l.state = State::kCopying;
}

// Whether a send lane's piece may be posted (its copy to the host, if any, has finished).
bool PieceTransfer::ready(Lane& l) {
  if (l.state == State::kCopying) settle_copy(l);
  return l.state == State::kReady;
}

void PieceTransfer::post_send(uint64_t piece) {
  Lane& l = lane(piece);
  const char* data = staged_ ? l.host : buf_ + offset(piece);
  ucp_request_param_t param = request_param(false, memory_);
  ucs_status_ptr_t r = ucp_tag_send_nbx(peer_->ep, data, length(piece), tag_, &param);
  l.state = State::kIdle;
  if (r == nullptr) {
    ++completed_;
  } else if (UCS_PTR_IS_ERR(r)) {
    fail(request_error(UCS_PTR_STATUS(r), "tag send"));
  } else {
    l.request = r;
    l.state = State::kInFlight;
  }
}

// One round of a receive: post pieces into free lanes (until the end is known), collect arrivals,
// handle them in piece order, finish copies to the device, drop the rest of a truncated message.
// True when something moved.
bool PieceTransfer::step_receive() {
  bool moved = false;
  while (error_ == Status::kOk && !ended_ && posted_ < pieces_ &&
         lane(posted_).state == State::kIdle) {
    post_receive(posted_++);
    moved = true;
  }
  for (Lane& l : lanes_) {
    if (l.state == State::kInFlight) {
      ucp_tag_recv_info_t info = {};
      ucs_status_t s = ucp_tag_recv_request_test(l.request, &info);
      if (s == UCS_INPROGRESS) continue;
      ucp_request_free(l.request);
      l.request = nullptr;
      l.result = s;
      l.length = s == UCS_OK || s == UCS_ERR_MESSAGE_TRUNCATED ? info.length : 0;
      l.state = State::kArrived;
      moved = true;
    } else if (l.state == State::kCopying) {
      moved |= settle_copy(l);
    }
  }
  while (delivered_ < posted_ && lane(delivered_).state == State::kArrived) {
    deliver(delivered_++);
    moved = true;
  }
  if (draining_) moved |= drain();
  return moved;
}

void PieceTransfer::post_receive(uint64_t piece) {
  Lane& l = lane(piece);
  char* dst = staged_ ? l.host : buf_ + offset(piece);
  ucp_request_param_t param = request_param(true, memory_);
  ucs_status_ptr_t r =
      ucp_tag_recv_nbx(worker_.handle(), dst, length(piece), tag_, kFullMask, &param);
  if (UCS_PTR_IS_PTR(r)) {
    l.request = r;
    l.state = State::kInFlight;
    return;
  }
  // Failed at once: handled in order by deliver().
  l.result = UCS_PTR_STATUS(r);
  l.length = 0;
  l.state = State::kArrived;
}

// Handles the arrival of `piece` (the pieces before it are handled): counts its bytes, starts its
// copy to the device, and ends the transfer at a short piece.
void PieceTransfer::deliver(uint64_t piece) {
  Lane& l = lane(piece);
  l.state = State::kIdle;
  if (l.result == UCS_ERR_CANCELED && (ended_ || error_ != Status::kOk)) return;  // ours
  // Only the last piece posted can be too small (the others are full pieces). When the sender's
  // piece was a full one, more pieces follow: drop them, as MPI completes a truncated message.
  if (l.result == UCS_ERR_MESSAGE_TRUNCATED) draining_ = l.length == kPieceBytes;
  if (l.result != UCS_OK) return fail(request_error(l.result, "tag receive"));
  if (ended_ || error_ != Status::kOk) return;
  received_ += l.length;
  if (l.length < kPieceBytes) end();
  if (!staged_ || l.length == 0) return;
  Status s = platform::copy_async(buf_ + offset(piece), l.host, l.length, channel_->to_device());
  if (s == Status::kOk) s = l.copied.record(channel_->to_device());
  if (s != Status::kOk) return fail(s);
  l.state = State::kCopying;
}

// Truncated receives: receives the sender's remaining pieces into a scratch buffer, one at a time,
// up to its short last piece, so that the sender completes and no piece is left behind to match a
// later receive. True when something moved.
bool PieceTransfer::drain() {
  if (drain_request_ == nullptr) {
    scratch_.resize(kPieceBytes);
    ucp_request_param_t param = request_param(true, UCS_MEMORY_TYPE_HOST);
    ucs_status_ptr_t r =
        ucp_tag_recv_nbx(worker_.handle(), scratch_.data(), kPieceBytes, tag_, kFullMask, &param);
    if (UCS_PTR_IS_ERR(r)) {
      draining_ = false;
    } else {
      drain_request_ = r;
    }
    return true;
  }
  ucp_tag_recv_info_t info = {};
  ucs_status_t s = ucp_tag_recv_request_test(drain_request_, &info);
  if (s == UCS_INPROGRESS) return false;
  ucp_request_free(drain_request_);
  drain_request_ = nullptr;
  if (s != UCS_OK || info.length < kPieceBytes) {
    draining_ = false;
    scratch_ = {};
  }
  return true;
}

// Moves a lane out of kCopying once its copy has finished (to kReady for a send still running,
// kIdle otherwise). True when it moved. A copy that failed fails the transfer.
bool PieceTransfer::settle_copy(Lane& l) {
  bool done = false;
  Status s = l.copied.query(&done);
  if (s != Status::kOk) {
    fail(s);
    done = true;  // the copy is no longer running: the runtime reported it
  }
  if (!done) return false;
  l.state = receive_ || error_ != Status::kOk ? State::kIdle : State::kReady;
  return true;
}

// A receive's short piece arrived: cancels the receives posted for pieces after it, which no
// message will match.
void PieceTransfer::end() {
  ended_ = true;
  for (Lane& l : lanes_) {
    if (l.state == State::kInFlight) ucp_request_cancel(worker_.handle(), l.request);
  }
}

// Records the first error; no further piece starts, and receives still posted (a drain's too) are
// cancelled.
void PieceTransfer::fail(Status s) {
  if (error_ == Status::kOk) error_ = s;
  if (!receive_) return;
  for (Lane& l : lanes_) {
    if (l.state == State::kInFlight) ucp_request_cancel(worker_.handle(), l.request);
  }
  if (drain_request_ != nullptr) ucp_request_cancel(worker_.handle(), drain_request_);
}

// The status of a failed request: kTransportError without a further log line when the peer's
// failure has been reported already, else converted with its own log line.
Status PieceTransfer::request_error(ucs_status_t s, const char* what) {
  return peer_->failed ? Status::kTransportError : ucx::convert(s, what);
}

// Parameters of a tag send or receive. The memory type is known, which spares UCX its lookup. A
// receive always returns a request, even when its message is already there, so that its length
// comes from ucp_tag_recv_request_test(): UCX 1.13 leaves the length of a receive completed at once
// unreported.
ucp_request_param_t PieceTransfer::request_param(bool receive, ucs_memory_type_t memory) const {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.memory_type = memory;
  if (receive) param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  return param;
}

// Completion: gives the host buffers back at once, rather than when the owner destroys the
// transfer, so that the next staged transfer finds the pool's pieces free.
void PieceTransfer::finish() {
  done_ = true;
  for (Lane& l : lanes_) {
    l.pinned = StagingPiece();
    l.pageable.reset();
    l.host = nullptr;
  }
}

// The worker was shut down under the transfer: its requests went with it. Waits only for copies
// into or out of the host buffers, which the GPU runtime still runs, before giving them back.
void PieceTransfer::abandon() {
  for (Lane& l : lanes_) {
    if (l.state != State::kCopying) l.state = State::kIdle;
    l.request = nullptr;
  }
  drain_request_ = nullptr;
  draining_ = false;
  if (error_ == Status::kOk) {
    MPIZIP_WARN("UCX transfer outlived the UCX shutdown");
    error_ = Status::kTransportError;
  }
  for (Lane& l : lanes_) {
    while (l.state == State::kCopying) settle_copy(l);
  }
  finish();
}

void Channel::advance_all() {
  for (PieceTransfer* t : active_) t->advance();
}

class UcxTransport final : public Transport {
 public:
  UcxTransport(std::shared_ptr<Channel> channel, bool device_memory)
      : channel_(std::move(channel)), device_memory_(device_memory) {}

  const char* name() const override { return "ucx"; }
  bool reaches_device_memory() const override { return device_memory_; }

  Status isend(const void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    return start(false, const_cast<void*>(buf), bytes, where, peer, tag, out);
  }
  Status irecv(void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) override {
    return start(true, buf, bytes, where, peer, tag, out);
  }

  void progress() override {
    ucx::Worker& w = channel_->worker();
    std::lock_guard<std::mutex> lock(w.mutex());
    if (w.closed()) return;
    w.progress();
    channel_->advance_all();
  }

  bool same_node(int peer) const override {
    return peer >= 0 && peer < channel_->size() && channel_->same_node(peer);
  }

 private:
  // Posts a send or a receive and starts its first pieces, so that the data starts moving before
  // the caller's first test().
  Status start(bool receive, void* buf, uint64_t bytes, Memory where, int peer, uint64_t tag,
               std::unique_ptr<Transfer>* out) {
    if (peer < 0 || peer >= channel_->size() || (buf == nullptr && bytes > 0) || out == nullptr) {
      return Status::kInvalidArgument;
    }
    bool device = where == Memory::kDevice && bytes > 0;
    if (device && !platform::has_gpu()) return Status::kNoDevice;
    bool staged = device && !device_memory_;
    ucx::Worker& w = channel_->worker();
    std::lock_guard<std::mutex> lock(w.mutex());
    if (w.closed()) {
      MPIZIP_LOG_ONCE(kWarn, "UCX transfer requested after the UCX shutdown");
      return Status::kTransportError;
    }
    ucx::Peer* p = nullptr;
    MPIZIP_CHECK(channel_->connect(peer, &p));
    if (staged) MPIZIP_CHECK(channel_->prepare_streams());
    auto t = std::make_unique<PieceTransfer>(
        channel_, p, channel_->wire_tag(receive ? peer : channel_->rank(), tag), receive,
        static_cast<char*>(buf), bytes,
        device && !staged ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST, staged);
    t->advance();
    *out = std::move(t);
    return Status::kOk;
  }

  std::shared_ptr<Channel> channel_;
  bool device_memory_;
};

// Converts the return code of an MPI call made while setting up: kMpiError, with a log line naming
// the call.
Status mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::kOk;
  MPIZIP_WARN("UCX transport setup: %s failed (MPI error %d)", what, rc);
  return Status::kMpiError;
}

// Whether every rank of `comm` started UCX: the local status where it failed here, kTransportError
// where it failed elsewhere.
Status agree_started(MPI_Comm comm, Status local) {
  int ok = local == Status::kOk;
  MPIZIP_CHECK(mpi_check(PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm),
                         "MPI_Allreduce"));
  if (ok) return Status::kOk;
  if (local != Status::kOk) return local;
  MPIZIP_INFO("UCX did not start on every rank of the communicator");
  return Status::kTransportError;
}

// Agrees on a context id that no member process holds: each proposes its lowest free id at or
// above a floor, the highest proposal is tried, and the round repeats above it until every member
// could reserve it (usually one round). On success this rank holds *id in `worker`.
Status agree_context_id(MPI_Comm comm, ucx::Worker& worker, uint32_t* id) {
  int floor = 0;
  for (;;) {
    int candidate;
    {
      std::lock_guard<std::mutex> lock(worker.mutex());
      candidate = static_cast<int>(worker.first_free_id(static_cast<uint32_t>(floor)));
    }
    MPIZIP_CHECK(mpi_check(PMPI_Allreduce(MPI_IN_PLACE, &candidate, 1, MPI_INT, MPI_MAX, comm),
                           "MPI_Allreduce"));
    if (candidate >= static_cast<int>(ucx::Worker::kContextIds)) {
      MPIZIP_WARN("UCX transport: all %u context ids are in use", ucx::Worker::kContextIds);
      return Status::kUnsupported;
    }
    int reserved;
    {
      std::lock_guard<std::mutex> lock(worker.mutex());
      reserved = worker.reserve_id(static_cast<uint32_t>(candidate));
    }
    int everywhere = reserved;
    Status s = mpi_check(PMPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_MIN, comm),
                         "MPI_Allreduce");
    if (s == Status::kOk && everywhere) {
      *id = static_cast<uint32_t>(candidate);
      return Status::kOk;
    }
    if (reserved) {
      std::lock_guard<std::mutex> lock(worker.mutex());
      worker.release_id(static_cast<uint32_t>(candidate));
    }
    MPIZIP_CHECK(s);
    floor = candidate + 1;
  }
}

// Gathers every rank's worker address: their sizes first, then the addresses themselves.
Status exchange_addresses(MPI_Comm comm, ucx::Worker& worker, Channel* channel) {
  std::vector<uint8_t> mine;
  {
    std::lock_guard<std::mutex> lock(worker.mutex());
    mine = worker.address();
  }
  int n = channel->size();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(n), offsets(n);
  MPIZIP_CHECK(mpi_check(PMPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm),
                         "MPI_Allgather"));
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
    if (total > INT_MAX) {
      MPIZIP_WARN("UCX transport: worker addresses exceed 2 GiB in all");
      return Status::kUnsupported;
    }
  }
  std::vector<uint8_t> all(static_cast<size_t>(total));
  MPIZIP_CHECK(mpi_check(PMPI_Allgatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(),
                                         offsets.data(), MPI_BYTE, comm),
                         "MPI_Allgatherv"));
  for (int r = 0; r < n; ++r) {
    channel->set_address(r, std::string(reinterpret_cast<const char*>(all.data()) + offsets[r],
                                        static_cast<size_t>(lengths[r])));
  }
  return Status::kOk;
}

// Marks the ranks that share this rank's node (MPI_COMM_TYPE_SHARED). The split runs even under
// force_internode, so that ranks that disagree on the option still call the same collectives.
Status find_node_peers(MPI_Comm comm, bool force_internode, Channel* channel) {
  MPI_Comm node;
  MPIZIP_CHECK(mpi_check(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, channel->rank(),
                                              MPI_INFO_NULL, &node),
                         "MPI_Comm_split_type"));
  int n = channel->size();
  std::vector<int> ranks(n), in_node(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  MPI_Group group, node_group;
  int rc = PMPI_Comm_group(comm, &group);
  if (rc == MPI_SUCCESS) {
    rc = PMPI_Comm_group(node, &node_group);
    if (rc == MPI_SUCCESS) {
      rc = PMPI_Group_translate_ranks(group, n, ranks.data(), node_group, in_node.data());
      PMPI_Group_free(&node_group);
    }
    PMPI_Group_free(&group);
  }
  PMPI_Comm_free(&node);
  MPIZIP_CHECK(mpi_check(rc, "MPI_Group_translate_ranks"));
  if (force_internode) return Status::kOk;
  for (int r = 0; r < n; ++r) {
    if (in_node[r] != MPI_UNDEFINED) channel->set_same_node(r);
  }
  return Status::kOk;
}

}  // namespace

Status create_ucx(MPI_Comm comm, const Options& options, std::unique_ptr<Transport>* out) {
  int rank = 0, size = 0;
  MPIZIP_CHECK(mpi_check(PMPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  MPIZIP_CHECK(mpi_check(PMPI_Comm_size(comm, &size), "MPI_Comm_size"));
  if (size > (1 << kRankBits)) {
    MPIZIP_INFO("UCX transport: %d ranks exceed the %d that its tags can name", size,
                1 << kRankBits);
    return Status::kUnsupported;
  }
  std::shared_ptr<ucx::Worker> worker;
  MPIZIP_CHECK(agree_started(comm, ucx::Worker::get(&worker)));
  uint32_t id = 0;
  MPIZIP_CHECK(agree_context_id(comm, *worker, &id));
  bool device_memory;
  {
    std::lock_guard<std::mutex> lock(worker->mutex());
    device_memory = worker->reaches_device_memory();
  }
  auto channel =
      std::make_shared<Channel>(std::move(worker), id, rank, size, options.staging_bytes);
  MPIZIP_CHECK(exchange_addresses(comm, channel->worker(), channel.get()));
  MPIZIP_CHECK(find_node_peers(comm, options.force_internode, channel.get()));
  *out = std::make_unique<UcxTransport>(std::move(channel), device_memory);
  return Status::kOk;
}

void shutdown_ucx() { ucx::Worker::shutdown(); }

}  // namespace mpizip::transport
