// Pinned host memory through which transports stage device buffers when the wire cannot reach
// device memory: one pool per process of fixed-size pieces, allocated on first use from the
// process's pooled pinned memory (src/platform/buffers.h) and never more than a bound
// (Options::staging_bytes, MPIZIP_STAGING_BYTES, which also bounds that pooled memory as a whole). A transfer that finds the pool
// exhausted stages through pageable memory instead, so a full pool slows transfers down but never
// holds one back (two ranks waiting for each other's pieces could otherwise wait forever).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "src/platform/buffers.h"
#include "src/platform/device.h"
#include "src/platform/status.h"

namespace mpizip::transport {

class StagingPool;

// One piece of the pool, returned to it on destruction. Movable, not copyable.
class StagingPiece {
 public:
  StagingPiece() = default;
  ~StagingPiece();
  StagingPiece(StagingPiece&& other) noexcept;
  StagingPiece& operator=(StagingPiece&& other) noexcept;
  void* data() const { return data_; }

 private:
  friend class StagingPool;
  void reset();
  std::shared_ptr<StagingPool> pool_;  // keeps the pool alive while the piece is out
  void* data_ = nullptr;
};

class StagingPool : public std::enable_shared_from_this<StagingPool> {
 public:
  static constexpr uint64_t kPieceBytes = uint64_t{4} << 20;

  // The process's pool, shared by every transport that holds it and freed with the last one. Its
  // bound is the largest `bound_bytes` asked for (in whole pieces; below one piece, none).
  static std::shared_ptr<StagingPool> shared(uint64_t bound_bytes);

  // A free piece, allocating one while under the bound. kOutOfMemory when the bound is reached or
  // pinned memory cannot be had (the pool then stops growing).
  Status acquire(StagingPiece* out);

 private:
  friend class StagingPiece;
  void release(void* data);

  std::mutex mutex_;
  uint64_t max_pieces_ = 0;
  std::vector<std::unique_ptr<platform::HostBuffer>> pieces_;  // every piece allocated
  std::vector<void*> free_;
};

}  // namespace mpizip::transport
