// What the data of each point-to-point stream compresses to, so that a stream that does not
// compress stops paying for the attempt. A stream is a communicator's messages to one destination
// with one tag and element type. Once kProbe messages of a stream in a row have compressed to more
// than kIncompressible of their size, its messages travel raw, except every kRetry-th, which tries
// again (data changes: a model's weights compress, the optimizer's random state does not). One per
// communicator (src/core: CommState); thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "kernels/format.h"

namespace mpizip::p2p {

class StreamRatios {
 public:
  static constexpr uint32_t kProbe = 3;
  static constexpr double kIncompressible = 0.95;
  static constexpr uint32_t kRetry = 64;

  // Whether the next message of the stream should try compression (true for a stream not seen
  // incompressible, and for an incompressible one's retry). Counts the message a skip otherwise.
  bool worth_trying(int dest, int tag, format::DType t);
  // What a message that tried compression came to: `wire` payload bytes for `app` bytes.
  void record(int dest, int tag, format::DType t, uint64_t app, uint64_t wire);
  // What the stream's messages compressed to lately (a moving average of wire over app bytes), or
  // `fallback` for a stream none of whose messages tried yet, and for a retry. A stream found to
  // compress to more than kIncompressible here counts as incompressible at once (the cost model
  // that asks keeps it raw).
  double expected_ratio(int dest, int tag, format::DType t, double fallback);

  // Statistics: streams found incompressible so far, and messages sent raw because of it.
  uint64_t incompressible_streams() const { return streams_.load(std::memory_order_relaxed); }
  uint64_t skipped_messages() const { return skipped_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    uint32_t poor = 0;           // messages in a row that compressed poorly
    uint32_t since_try = 0;      // messages since the last try, while incompressible
    bool incompressible = false;
    double ratio = 0;            // moving average of wire / app bytes; 0: none yet
    bool retrying = false;       // worth_trying() let an incompressible stream's retry through
  };
  static uint64_t key(int dest, int tag, format::DType t);

  std::mutex mutex_;
  std::unordered_map<uint64_t, Entry> entries_;  // bounded: forgotten past kMaxEntries
  static constexpr size_t kMaxEntries = 4096;
  std::atomic<uint64_t> streams_{0};
  std::atomic<uint64_t> skipped_{0};
};

}  // namespace mpizip::p2p
