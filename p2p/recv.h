// The receiver's side of the protocol: receive the match message (posted to MPI with the
// application's source and tag, or taken from the probed queue), then the bulk payload if any, then
// decode straight into the application's buffer and report the application's status.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "p2p/channel.h"
#include "p2p/probed_queue.h"
#include "src/platform/operation.h"

namespace mpizip::p2p {

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
  int post_error() const { return post_error_; }
  const Traffic& traffic() const { return traffic_; }
  // Called once with the message's traffic when the receive completes (for statistics).
  void on_complete(std::function<void(const Traffic&)> fn) { on_complete_ = std::move(fn); }

 private:
  enum class Phase { kMatch, kBulk, kDone };
  bool advance();
  void on_match(const uint8_t* msg, uint64_t bytes, int source, int tag, bool protocol);
  void deliver(const uint8_t* payload);
  void finish(int error);

  Channel ch_;
  UserBuffer b_;
  Phase phase_ = Phase::kMatch;
  int post_error_ = 0;
  MPI_Request match_req_ = MPI_REQUEST_NULL;
  std::unique_ptr<uint8_t[]> match_buf_;  // not zero-filled: MPI writes what it receives
  size_t match_capacity_ = 0;
  std::unique_ptr<ProbedMessage> probed_;
  MatchHeader header_{};
  std::vector<MPI_Request> bulk_reqs_;
  std::vector<uint8_t> bulk_buf_;
  bool bulk_in_place_ = false;  // raw payload received straight into the user's host buffer
  Traffic traffic_;
  std::function<void(const Traffic&)> on_complete_;
};

}  // namespace mpizip::p2p
