#include "p2p/stream_ratios.h"

namespace mpizip::p2p {

uint64_t StreamRatios::key(int dest, int tag, format::DType t) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(dest)) << 32) ^
         (static_cast<uint64_t>(static_cast<uint32_t>(tag)) << 4) ^ static_cast<uint64_t>(t);
}

bool StreamRatios::worth_trying(int dest, int tag, format::DType t) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key(dest, tag, t));
  if (it == entries_.end() || !it->second.incompressible) return true;
  if (++it->second.since_try >= kRetry) {
    it->second.since_try = 0;
    it->second.retrying = true;  // expected_ratio() answers the type's typical ratio once
    return true;  // a retry: record() keeps the stream raw, or lets it compress again
  }
  skipped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

double StreamRatios::expected_ratio(int dest, int tag, format::DType t, double fallback) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key(dest, tag, t));
  if (it == entries_.end() || !(it->second.ratio > 0)) return fallback;
  Entry& e = it->second;
  if (e.retrying) {  // a retry asks as a new stream would
    e.retrying = false;
    return fallback;
  }
  // A cost model that learns the stream compresses to nothing keeps it raw from then on, so
  // the stream counts as incompressible from its first poor try (worth_trying then skips it but
  // for its retries).
  if (e.ratio > kIncompressible && !e.incompressible) {
    e.incompressible = true;
    e.since_try = 0;
    streams_.fetch_add(1, std::memory_order_relaxed);
  }
  return e.ratio;
}

void StreamRatios::record(int dest, int tag, format::DType t, uint64_t app, uint64_t wire) {
  if (app == 0) return;
  const bool poor = static_cast<double>(wire) > kIncompressible * static_cast<double>(app);
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.size() >= kMaxEntries) entries_.clear();  // many streams: start afresh
  Entry& e = entries_[key(dest, tag, t)];
  const double ratio = static_cast<double>(wire) / static_cast<double>(app);
  const double average = e.ratio > 0 ? (e.ratio + ratio) / 2 : ratio;
  if (!poor) {
    e = Entry{};  // compresses (again): every message tries
    e.ratio = average;
    return;
  }
  e.ratio = average;
  if (e.incompressible) return;
  if (++e.poor >= kProbe) {
    e.incompressible = true;
    e.since_try = 0;
    streams_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace mpizip::p2p
