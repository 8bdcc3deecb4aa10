#include "src/platform/buffers.h"

#include <atomic>
#include <bit>
#include <mutex>
#include <new>
#include <vector>

#include "src/platform/device.h"

namespace mpizip::platform {
namespace {

// Blocks are 2^k bytes, from 64 KiB (smaller requests take a 64 KiB block) to 2^40.
constexpr int kMinShift = 16;
constexpr int kClasses = 41 - kMinShift;

struct Block {
  uint8_t* data;
  bool pinned;  // host pool: page-locked by the GPU runtime
};

// Free blocks by size class. `kept` counts the bytes of every block the pool has handed out or
// holds free: while it is under the bound a new block joins the pool (and returns to the free
// list when released); beyond it, a block is allocated for one use and freed after it.
struct FreeLists {
  std::mutex mutex;
  std::vector<Block> free[kClasses];
  uint64_t max_bytes = uint64_t{256} << 20;
  uint64_t kept = 0;
  std::atomic<uint64_t> pinned{0};
};

// Never destroyed: pinned and device blocks must not be released after the GPU runtime has shut
// down at exit, and the operating system reclaims them.
FreeLists& lists(Pool p) {
  static FreeLists* host = new FreeLists;
  static FreeLists* device = new FreeLists;
  return p == Pool::kHost ? *host : *device;
}

int size_class(uint64_t bytes) {
  if (bytes <= (uint64_t{1} << kMinShift)) return 0;
  return std::bit_width(bytes - 1) - kMinShift;
}

// A new block of `bytes`: device memory, or pinned host memory with the heap as fallback.
bool allocate(Pool p, uint64_t bytes, Block* out) {
  if (p == Pool::kDevice) {
    void* d = device_alloc(bytes);
    *out = Block{static_cast<uint8_t*>(d), false};
    return d != nullptr;
  }
  if (void* d = pinned_alloc(bytes)) {
    lists(p).pinned.fetch_add(bytes);
    *out = Block{static_cast<uint8_t*>(d), true};
    return true;
  }
  auto* d = new (std::nothrow) uint8_t[bytes];
  *out = Block{d, false};
  return d != nullptr;
}

void release(Pool p, uint64_t bytes, const Block& b) {
  if (p == Pool::kDevice) {
    device_free(b.data);
  } else if (b.pinned) {
    lists(p).pinned.fetch_sub(bytes);
    pinned_free(b.data);
  } else {
    delete[] b.data;
  }
}

// Takes a block of class `c`: a free one, else a new one. `pooled` tells whether it counts
// against the bound (and returns to the free list).
bool take(Pool p, int c, Block* out, bool* pooled) {
  const uint64_t bytes = uint64_t{1} << (c + kMinShift);
  FreeLists& l = lists(p);
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    if (!l.free[c].empty()) {
      *out = l.free[c].back();
      l.free[c].pop_back();
      *pooled = true;
      return true;
    }
    *pooled = l.kept + bytes <= l.max_bytes;
    if (*pooled) l.kept += bytes;
  }
  if (allocate(p, bytes, out)) return true;
  if (*pooled) {
    std::lock_guard<std::mutex> lock(l.mutex);
    l.kept -= bytes;
  }
  return false;
}

void give_back(Pool p, int c, const Block& b, bool pooled) {
  if (pooled) {
    FreeLists& l = lists(p);
    std::lock_guard<std::mutex> lock(l.mutex);
    l.free[c].push_back(b);
    return;
  }
  release(p, uint64_t{1} << (c + kMinShift), b);
}

}  // namespace

void buffers_configure(uint64_t host_pool_bytes, uint64_t device_pool_bytes) {
  {
    std::lock_guard<std::mutex> lock(lists(Pool::kHost).mutex);
    lists(Pool::kHost).max_bytes = host_pool_bytes;
  }
  std::lock_guard<std::mutex> lock(lists(Pool::kDevice).mutex);
  lists(Pool::kDevice).max_bytes = device_pool_bytes;
}

uint64_t pinned_pool_bytes() { return lists(Pool::kHost).pinned.load(); }

template <Pool kPool>
PooledBuffer<kPool>& PooledBuffer<kPool>::operator=(PooledBuffer&& o) noexcept {
  if (this != &o) {
    clear();
    data_ = o.data_;
    size_ = o.size_;
    capacity_ = o.capacity_;
    pinned_ = o.pinned_;
    pooled_ = o.pooled_;
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
    o.pinned_ = o.pooled_ = false;
  }
  return *this;
}

template <Pool kPool>
Status PooledBuffer<kPool>::resize(uint64_t bytes) {
  if (bytes <= capacity_) {
    size_ = bytes;
    return Status::kOk;
  }
  clear();
  if (kPool == Pool::kDevice && !has_gpu()) return Status::kNoDevice;
  const int c = size_class(bytes);
  if (c >= kClasses) return Status::kOutOfMemory;
  Block b;
  bool pooled = false;
  if (!take(kPool, c, &b, &pooled)) return Status::kOutOfMemory;
  data_ = b.data;
  size_ = bytes;
  capacity_ = uint64_t{1} << (c + kMinShift);
  pinned_ = b.pinned;
  pooled_ = pooled;
  return Status::kOk;
}

template <Pool kPool>
void PooledBuffer<kPool>::clear() {
  if (data_ == nullptr) return;
  give_back(kPool, size_class(capacity_), Block{data_, pinned_}, pooled_);
  data_ = nullptr;
  size_ = capacity_ = 0;
  pinned_ = pooled_ = false;
}

template class PooledBuffer<Pool::kHost>;
template class PooledBuffer<Pool::kDevice>;

}  // namespace mpizip::platform
