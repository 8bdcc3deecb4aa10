#include "src/transport/emulated.h"

#include <time.h>

#include <algorithm>
#include <cmath>

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

EmulatedLink::EmulatedLink(double gbps, double latency_us, int peers)
    : ns_per_byte_(1.0 / gbps),
      latency_ns_(std::llround(latency_us * 1000.0)),
      free_ns_(static_cast<size_t>(peers), 0) {}

LinkSlot EmulatedLink::reserve(int peer, uint64_t bytes) {
  LinkSlot s;
  s.paced = true;
  s.start_ns = std::max(monotonic_ns(), free_ns_[peer]);
  s.end_ns = s.start_ns + std::llround(static_cast<double>(bytes) * ns_per_byte_);
  s.arrive_ns = s.end_ns + latency_ns_;
  free_ns_[peer] = s.end_ns;
  return s;
}

}  // namespace mpizip::transport
