// Messages that a probe has taken out of MPI's matching on a protocol communicator. A probe must
// report the application's element count, which only the match header knows, so MPIZip probes with
// MPI_Mprobe, receives the message and keeps it here; the next receive that matches it takes it
// from here before asking MPI. A message taken by a probe was the earliest one MPI could match for
// those arguments, so serving it first keeps MPI's order.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "p2p/wire.h"

namespace mpizip::p2p {

// What a probe reports of a message: what the application would see.
struct ProbeResult {
  int source = MPI_ANY_SOURCE;
  int tag = MPI_ANY_TAG;
  uint64_t bytes = 0;  // bytes the application would receive
};

struct ProbedMessage {
  int source = MPI_ANY_SOURCE;
  int tag = MPI_ANY_TAG;
  bool protocol = false;      // a match message (header valid), or a plain message
  MatchHeader header{};       // when protocol
  std::vector<uint8_t> bytes; // the whole message as received
  ProbeResult result() const {
    return ProbeResult{source, tag, protocol ? header.app_bytes : bytes.size()};
  }
};

class ProbedQueue {
 public:
  ProbedQueue() = default;
  ProbedQueue(const ProbedQueue&) = delete;
  ProbedQueue& operator=(const ProbedQueue&) = delete;
  ~ProbedQueue();
  bool empty() const { return size_.load(std::memory_order_acquire) == 0; }
  // Whether any queue of the process holds a message: a receive need not find its communicator's
  // queue while none does.
  static bool any_queued() { return queued_anywhere_.load(std::memory_order_acquire) != 0; }
  void push(std::unique_ptr<ProbedMessage> m);
  // The earliest message matching (source, tag) with MPI's wildcard rules, taken out of the
  // queue; nullptr if none.
  std::unique_ptr<ProbedMessage> take(int source, int tag);
  // What a probe reports of that message, which stays queued (another thread may take it as soon
  // as this returns, so nothing of the message itself is handed out).
  std::optional<ProbeResult> peek(int source, int tag);

 private:
  std::mutex mutex_;
  std::deque<std::unique_ptr<ProbedMessage>> queue_;
  std::atomic<size_t> size_{0};
  static std::atomic<size_t> queued_anywhere_;
};

}  // namespace mpizip::p2p
