#include "src/transport/ucx_transfer.h"

#include <cstring>
#include <thread>
#include <utility>

#include "src/platform/log.h"

namespace mpizip::transport::ucx {
namespace {

constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};  // receives match every bit of the wire tag

}  // namespace

PieceTransfer::PieceTransfer(std::shared_ptr<Channel> channel, Peer* peer, ucp_tag_t tag,
                             bool receive, char* buf, uint64_t bytes, ucs_memory_type_t memory,
                             bool staged)
    : channel_(std::move(channel)), worker_(channel_->worker()), peer_(peer), tag_(tag),
      receive_(receive), buf_(buf), bytes_(bytes), pieces_(bytes / kPieceBytes + 1),
      memory_(memory), staged_(staged),
      lanes_(std::min<uint64_t>(staged ? kStagedLanes : kHostLanes, pieces_)) {
  if (staged_) take_buffers();
  channel_->add(this);
}

Status PieceTransfer::test(bool* done) {
  std::lock_guard<std::mutex> lock(worker_.mutex());
  if (!done_) {
    if (!worker_.closed()) worker_.progress();
    advance();
  }
  *done = done_;
  return done_ ? error_ : Status::kOk;
}

uint64_t PieceTransfer::received_bytes() const {
  std::lock_guard<std::mutex> lock(worker_.mutex());
  return received_;
}

// Steps until nothing moves; the transfer is done once every lane is idle and it either completed
// or failed.
void PieceTransfer::advance() {
  if (done_) return;
  if (worker_.closed()) return abandon();
  if (peer_->failed) fail(Status::kTransportError);
  for (bool moved = true; moved;) moved = receive_ ? step_receive() : step_send();
  bool idle = !draining_ && drain_request_ == nullptr &&
              std::all_of(lanes_.begin(), lanes_.end(),
                          [](const Lane& l) { return l.state == State::kIdle; });
  bool complete = receive_ ? ended_ : completed_ == pieces_;
  if (idle && (complete || error_ != Status::kOk)) finish();
}

// Destroying an unfinished transfer: receives still posted are cancelled and no further piece of a
// send is posted, then the transfer waits for what UCX and the copy streams still hold (a send that
// the peer never receives keeps it waiting until the endpoint fails). The mutex is released between
// rounds so that other threads keep communicating.
PieceTransfer::~PieceTransfer() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(worker_.mutex());
      if (!done_) {
        if (!worker_.closed()) {
          fail(Status::kTransportError);
          worker_.progress();
        }
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
// else pageable and no larger than the transfer's largest piece. Each lane's event is recorded
// once here, which creates it on the caller's device, the streams' device: later records may come
// from the progress thread, whose current device can differ.
void PieceTransfer::take_buffers() {
  const platform::Stream& stream = receive_ ? channel_->to_device() : channel_->to_host();
  for (Lane& l : lanes_) {
    if (channel_->pool().acquire(&l.pinned) == Status::kOk) {
      l.host = static_cast<char*>(l.pinned.data());
    } else {
      MPIZIP_LOG_ONCE(kInfo, "UCX: the pinned staging pool is in use; staging device buffers "
                             "through pageable memory meanwhile");
      l.pageable.reset(new char[std::min(kPieceBytes, bytes_)]);
      l.host = l.pageable.get();
    }
    Status s = l.copied.record(stream);
    if (s != Status::kOk) fail(s);
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
  ucp_request_param_t param = request_param(memory_, false);
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
    if (posted_ + 1 < pieces_) {
      post_receive(posted_);
    } else if (!claim_last()) {
      break;
    }
    ++posted_;
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
      l.length = s == UCS_OK ? info.length : 0;
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
  if (draining_ || drain_request_ != nullptr) moved |= drain();
  return moved;
}

// Where piece `piece` of a receive lands: the user's buffer, or its lane's host buffer.
char* PieceTransfer::landing(uint64_t piece) {
  return staged_ ? lane(piece).host : buf_ + offset(piece);
}

void PieceTransfer::post_receive(uint64_t piece) {
  Lane& l = lane(piece);
  ucp_request_param_t param = request_param(memory_, true);
  ucs_status_ptr_t r =
      ucp_tag_recv_nbx(worker_.handle(), landing(piece), length(piece), tag_, kFullMask, &param);
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

// Takes the receive's last piece once it has arrived (every piece before it is posted, so the
// first message of the tag still unmatched is this piece), learning its length first: one that
// does not fit goes to `scratch_`. False while it has not arrived.
bool PieceTransfer::claim_last() {
  uint64_t piece = pieces_ - 1;
  ucp_tag_recv_info_t info;
  ucp_tag_message_h message = ucp_tag_probe_nb(worker_.handle(), tag_, kFullMask, 1, &info);
  if (message == nullptr) return false;
  Lane& l = lane(piece);
  l.truncated = info.length > length(piece);
  if (l.truncated) scratch_.resize(info.length);
  ucp_request_param_t param = request_param(l.truncated ? UCS_MEMORY_TYPE_HOST : memory_, false);
  ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(
      worker_.handle(), l.truncated ? scratch_.data() : landing(piece), info.length, message,
      &param);
  l.length = info.length;
  if (UCS_PTR_IS_PTR(r)) {
    l.request = r;
    l.state = State::kInFlight;
  } else {
    l.result = UCS_PTR_STATUS(r);
    l.state = State::kArrived;
  }
  return true;
}

// Handles the arrival of `piece` (the pieces before it are handled): counts its bytes, starts its
// copy to the device, and ends the transfer at a short piece (or at a last piece too large, after
// copying the part that fits).
void PieceTransfer::deliver(uint64_t piece) {
  Lane& l = lane(piece);
  l.state = State::kIdle;
  bool truncated = std::exchange(l.truncated, false);
  if (l.result == UCS_ERR_CANCELED && (ended_ || error_ != Status::kOk)) return;  // ours
  if (l.result != UCS_OK) return fail(request_error(l.result, "tag receive"));
  if (ended_ || error_ != Status::kOk) return;
  uint64_t sent = l.length;
  if (truncated) {
    l.length = length(piece);
    if (l.length > 0) std::memcpy(landing(piece), scratch_.data(), l.length);
  }
  received_ += l.length;
  if (l.length < kPieceBytes) end();
  if (truncated) {
    fail(convert(UCS_ERR_MESSAGE_TRUNCATED, "tag receive"));
    draining_ = sent == kPieceBytes;  // a full piece from the sender: more follow, to be dropped
  }
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
  if (drain_request_ != nullptr) {
    ucp_tag_recv_info_t info = {};
    ucs_status_t s = ucp_tag_recv_request_test(drain_request_, &info);
    if (s == UCS_INPROGRESS) return false;
    ucp_request_free(drain_request_);
    drain_request_ = nullptr;
    if (s != UCS_OK || info.length < kPieceBytes) draining_ = false;
    return true;
  }
  if (!draining_) return false;
  scratch_.resize(kPieceBytes);
  ucp_request_param_t param = request_param(UCS_MEMORY_TYPE_HOST, true);
  ucs_status_ptr_t r =
      ucp_tag_recv_nbx(worker_.handle(), scratch_.data(), kPieceBytes, tag_, kFullMask, &param);
  if (UCS_PTR_IS_ERR(r)) {
    draining_ = false;
  } else {
    drain_request_ = r;
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

// Records the first error; no further piece starts, and receives still posted are cancelled (a
// drain's too: draining stops).
void PieceTransfer::fail(Status s) {
  if (error_ == Status::kOk) error_ = s;
  if (!receive_) return;
  for (Lane& l : lanes_) {
    if (l.state == State::kInFlight) ucp_request_cancel(worker_.handle(), l.request);
  }
  if (drain_request_ != nullptr) ucp_request_cancel(worker_.handle(), drain_request_);
  draining_ = false;
}

// The status of a failed request: kTransportError without a further log line when the peer's
// failure has been reported already, else converted with its own log line.
Status PieceTransfer::request_error(ucs_status_t s, const char* what) {
  return peer_->failed ? Status::kTransportError : convert(s, what);
}

// Parameters of a UCX send or receive of `memory`: the memory type is known, which spares UCX its
// lookup. `always_request` for receives whose length is not known in advance: they return a
// request even when their message is already there, so that the length comes from
// ucp_tag_recv_request_test() (UCX 1.13 leaves the length of a receive completed at once
// unreported).
ucp_request_param_t PieceTransfer::request_param(ucs_memory_type_t memory,
                                                 bool always_request) const {
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.memory_type = memory;
  if (always_request) param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
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
  scratch_ = {};
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
    MPIZIP_LOG_ONCE(kWarn, "UCX transfers outlived the UCX shutdown; they fail");
    error_ = Status::kTransportError;
  }
  for (Lane& l : lanes_) {
    while (l.state == State::kCopying) settle_copy(l);
  }
  finish();
}
// Transport::progress(): every unfinished transfer of the communicator takes its next steps (posts
// its next pieces, starts its next copies), which UCX's own progress does not do.
void Channel::advance_all() {
  for (PieceTransfer* t : active_) t->advance();
}

}  // namespace mpizip::transport::ucx
