// The receiver's side of the protocol: receive the match message (posted to MPI with the
// application's source and tag, or taken from the probed queue), then the bulk payload if any, then
// decode straight into the application's buffer and report the application's status.
#pragma once

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "p2p/channel.h"
#include "p2p/chunked.h"
#include "p2p/probed_queue.h"
#include "p2p/wire.h"
#include "p2p/gpu_codec.h"
#include "src/platform/buffers.h"
#include "src/transport/transport.h"
#include "src/platform/operation.h"

namespace mpizip::p2p {

// A blocking receive's fast path: a message (`bytes` bytes at `msg`) that is plain (wire.h: at
// most `bare_bytes`, or longer and not a match message), for a host buffer, is delivered with one
// copy. Returns false, doing nothing, for a match message (which then takes a RecvOp); else true
// with the error, delivered bytes and traffic filled in (source and tag are the caller's).
inline bool deliver_plain(const UserBuffer& b, const uint8_t* msg, uint64_t bytes,
                          uint64_t bare_bytes, platform::OpStatus* st, Traffic* traffic) {
  if (b.device) return false;
  MatchHeader h;
  if (bytes > bare_bytes && parse_header(msg, bytes, bare_bytes, &h)) return false;
  const uint64_t capacity = static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
  const uint64_t n = bytes < capacity ? bytes : capacity;
  copy_payload(b.ptr, msg, n);
  st->bytes = n;
  st->message_bytes = bytes;
  st->error = bytes > capacity ? Status::kTruncated : Status::kOk;
  traffic->app_bytes = traffic->wire_bytes = bytes;
  traffic->compressed = false;
  return true;
}

// Receives into overlapping host memory (OSU's osu_bw posts its whole window into one buffer).
// A receive whose match message lands in the application's memory (RecvOp's landing place, core's
// plain landing) reads it from there later, so no other receive may write that memory in between:
// the first message's header would be lost and its payload never taken. Each host receive holds a
// LandingGuard over its memory while it is in flight: a landing one (land(): only where no receive
// in flight overlaps it; null otherwise, and the receive lands in memory of MPIZip's), which
// becomes a writing one once its match message is read (parsed()), or a writing one (write()). A
// writer waits to write while a landing guard that overlaps it is unread (landing_unread()).
// Thread-safe; the guards in flight are few (a window's worth).
class LandingGuard {
 public:
  static std::unique_ptr<LandingGuard> land(const void* p, uint64_t bytes);
  static std::unique_ptr<LandingGuard> write(const void* p, uint64_t bytes);
  LandingGuard(const LandingGuard&) = delete;
  LandingGuard& operator=(const LandingGuard&) = delete;
  ~LandingGuard();
  void parsed();

 private:
  LandingGuard() = default;
};
bool landing_unread(const void* p, uint64_t bytes);
// Whether a receive waits for another's unread landing place (so that whoever holds that place
// should read it as soon as it lands: core's plain landing, requests.cc).
bool landing_waited_for();

class RecvOp : public platform::Operation {
 public:
  // Posts the receive of the match message, or takes it from the probed queue. `error()` tells
  // whether posting failed.
  RecvOp(const Channel& ch, const UserBuffer& b, int source, int tag);
  // Receives a message already taken by a matched probe (MPI_Mrecv).
  RecvOp(const Channel& ch, const UserBuffer& b, std::unique_ptr<ProbedMessage> m);
  // Continues from a match message the caller received itself (`bytes` bytes at `msg`, valid for
  // the duration of the call): a blocking receive's fast path.
  RecvOp(const Channel& ch, const UserBuffer& b, const uint8_t* msg, uint64_t bytes, int source,
         int tag);
  ~RecvOp() override;

  bool progress() override;
  bool cancel() override;
  Status post_error() const { return post_error_; }
  const Traffic& traffic() const { return traffic_; }
  // Called once with the message's traffic when the receive completes (for statistics).
  void on_complete(std::function<void(const Traffic&)> fn) { on_complete_ = std::move(fn); }

 private:
  enum class Phase { kMatch, kHeld, kBulk, kChunks, kDecode, kDone };
  bool advance();
  Status post_landing(int source, int tag);
  void landed_match(const MPI_Status& st, uint64_t bytes);
  void on_match(const uint8_t* msg, uint64_t bytes, int source, int tag, bool protocol);
  void landed();
  void deliver_host(const uint8_t* payload);
  void corrupt(Status s);
  // The message's truncation status: kTruncated when it is larger than the receive buffer.
  Status truncation() const;
  void finish(Status error);

  Channel ch_;
  UserBuffer b_;
  Phase phase_ = Phase::kMatch;
  Status post_error_;
  MPI_Request match_req_ = MPI_REQUEST_NULL;
  uint8_t* landing_ = nullptr;  // where the message lands: the buffer or landing_buf_
  std::unique_ptr<LandingGuard> landing_guard_;  // over a host buffer (LandingGuard)
  struct Held {  // a match message received into memory of MPIZip's, held while the buffer is
    int source = 0, tag = 0;  // another receive's unread landing place
    uint64_t bytes = 0;
    std::chrono::steady_clock::time_point since;
  } held_;
  uint64_t landing_capacity_ = 0;
  std::unique_ptr<uint8_t[]> landing_buf_;
  std::unique_ptr<uint8_t[]> match_buf_;  // a match message copied out of the buffer
  size_t match_capacity_ = 0;
  std::unique_ptr<ProbedMessage> probed_;
  MatchHeader header_{};
  std::unique_ptr<transport::Transfer> transfers_[2];  // the payload (kSplit: its two parts)
  platform::HostBuffer bulk_buf_;    // a host payload that cannot land in the user's buffer
  platform::DeviceBuffer device_buf_;  // a device payload that cannot land in the user's buffer
  bool in_place_ = false;            // raw payload received straight into the user's buffer
  bool host_fallback_ = false;       // a device payload received into host memory (no device
                                     // memory left)
  std::unique_ptr<ChunkedReceiver> chunked_;  // Payload::kChunked
  GpuJob job_;                       // decoding on the GPU
  std::chrono::steady_clock::time_point decode_start_;
  Traffic traffic_;
  std::function<void(const Traffic&)> on_complete_;
};

}  // namespace mpizip::p2p
