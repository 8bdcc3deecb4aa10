#include "src/transport/staging.h"

#include <algorithm>
#include <utility>

#include "src/platform/log.h"

namespace mpizip::transport {

StagingPiece::~StagingPiece() { reset(); }

StagingPiece::StagingPiece(StagingPiece&& other) noexcept
    : pool_(std::move(other.pool_)), data_(std::exchange(other.data_, nullptr)) {}

StagingPiece& StagingPiece::operator=(StagingPiece&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

void StagingPiece::reset() {
  if (data_ != nullptr) pool_->release(data_);
  data_ = nullptr;
  pool_.reset();
}

std::shared_ptr<StagingPool> StagingPool::shared(uint64_t bound_bytes) {
  static std::mutex mutex;
  static std::weak_ptr<StagingPool> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<StagingPool> pool = current.lock();
  if (pool == nullptr) {
    pool = std::make_shared<StagingPool>();
    current = pool;
  }
  std::lock_guard<std::mutex> pool_lock(pool->mutex_);
  pool->max_pieces_ = std::max(pool->max_pieces_, bound_bytes / kPieceBytes);
  return pool;
}

Status StagingPool::acquire(StagingPiece* out) {
  void* data = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) {
      if (pieces_.size() >= max_pieces_) return Status::kOutOfMemory;
      // From the process's pooled pinned memory (src/platform/buffers.h), so that one bound covers
      // all of MPIZip's pinned memory; unpinned memory (the bound reached) is of no use here.
      auto piece = std::make_unique<platform::HostBuffer>();
      if (piece->resize(kPieceBytes) != Status::kOk || !piece->pinned()) return Status::kOutOfMemory;
      free_.push_back(piece->data());
      pieces_.push_back(std::move(piece));
    }
    data = free_.back();
    free_.pop_back();
  }
  StagingPiece piece;
  piece.pool_ = shared_from_this();
  piece.data_ = data;
  *out = std::move(piece);
  return Status::kOk;
}

void StagingPool::release(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(data);
}

}  // namespace mpizip::transport
