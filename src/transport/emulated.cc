#include "src/transport/emulated.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <utility>

namespace mpizip::transport {

int64_t monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

int64_t LinkSlot::release_ns(uint64_t offset, uint64_t bytes) const {
  if (bytes == 0) return start_ns;
  const double fraction = static_cast<double>(offset) / static_cast<double>(bytes);
  return start_ns + std::llround(fraction * static_cast<double>(end_ns - start_ns));
}

namespace {
// Links::kRank: when this process's one outgoing link is free again, for all its communicators.
std::mutex g_rank_link_mutex;
int64_t g_rank_link_free_ns = 0;
}  // namespace

EmulatedLink::EmulatedLink(double gbps, double latency_us, std::vector<uint8_t> paced,
                           Links links)
    : ns_per_byte_(1.0 / gbps),
      latency_ns_(std::llround(latency_us * 1000.0)),
      paced_(std::move(paced)),
      links_(links),
      free_ns_(paced_.size(), 0) {}

LinkSlot EmulatedLink::reserve(int peer, uint64_t bytes) {
  if (!paced_[static_cast<size_t>(peer)]) return LinkSlot{};
  LinkSlot s;
  s.paced = true;
  const int64_t length = std::llround(static_cast<double>(bytes) * ns_per_byte_);
  if (links_ == Links::kRank) {
    std::lock_guard<std::mutex> lock(g_rank_link_mutex);
    s.start_ns = std::max(monotonic_ns(), g_rank_link_free_ns);
    g_rank_link_free_ns = s.start_ns + length;
  } else {
    s.start_ns = std::max(monotonic_ns(), free_ns_[static_cast<size_t>(peer)]);
    free_ns_[static_cast<size_t>(peer)] = s.start_ns + length;
  }
  s.end_ns = s.start_ns + length;
  s.arrive_ns = s.end_ns + latency_ns_;
  return s;
}

}  // namespace mpizip::transport
