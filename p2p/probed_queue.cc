#include "p2p/probed_queue.h"

namespace mpizip::p2p {
namespace {

bool matches(const ProbedMessage& m, int source, int tag) {
  return (source == MPI_ANY_SOURCE || source == m.source) && (tag == MPI_ANY_TAG || tag == m.tag);
}

}  // namespace

std::atomic<size_t> ProbedQueue::queued_anywhere_{0};

ProbedQueue::~ProbedQueue() {
  queued_anywhere_.fetch_sub(queue_.size(), std::memory_order_release);
}

void ProbedQueue::push(std::unique_ptr<ProbedMessage> m) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(m));
  size_.store(queue_.size(), std::memory_order_release);
  queued_anywhere_.fetch_add(1, std::memory_order_release);
}

std::unique_ptr<ProbedMessage> ProbedQueue::take(int source, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (matches(**it, source, tag)) {
      auto m = std::move(*it);
      queue_.erase(it);
      size_.store(queue_.size(), std::memory_order_release);
      queued_anywhere_.fetch_sub(1, std::memory_order_release);
      return m;
    }
  }
  return nullptr;
}

std::optional<ProbeResult> ProbedQueue::peek(int source, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& m : queue_) {
    if (matches(*m, source, tag)) return m->result();
  }
  return std::nullopt;
}

}  // namespace mpizip::p2p
