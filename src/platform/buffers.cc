#include "src/platform/buffers.h"

#include <atomic>
#include <bit>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "src/platform/device.h"

namespace mpizip::platform {
namespace {

// Block sizes: 64 KiB (smaller requests take a 64 KiB block), then four classes per octave,
// 2^k x {1.25, 1.5, 1.75, 2} up to 2^40, so that a request just over a power of two (a compressed
// stream's worst case is a little more than its input) wastes at most a quarter of its block.
constexpr int kMinShift = 16;
constexpr int kClasses = 1 + 4 * (40 - kMinShift);

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
  const int k = std::bit_width(bytes - 1) - 1;  // 2^k < bytes <= 2^(k+1)
  const uint64_t quarter = uint64_t{1} << (k - 2);
  const auto q = static_cast<int>((bytes - (uint64_t{1} << k) + quarter - 1) / quarter);  // 1..4
  return 1 + 4 * (k - kMinShift) + (q - 1);
}

uint64_t class_bytes(int c) {
  if (c == 0) return uint64_t{1} << kMinShift;
  const int k = kMinShift + (c - 1) / 4;
  return (uint64_t{1} << k) + static_cast<uint64_t>((c - 1) % 4 + 1) * (uint64_t{1} << (k - 2));
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
// against the bound (and returns to the free list). When the bound leaves no room, free blocks of
// other classes are released to make it (the sizes of a job's messages change rarely, and a pool
// stuck with blocks of the wrong size would send every later message to one-use blocks).
bool take(Pool p, int c, Block* out, bool* pooled) {
  const uint64_t bytes = class_bytes(c);
  FreeLists& l = lists(p);
  std::vector<std::pair<int, Block>> evicted;
  {
    std::lock_guard<std::mutex> lock(l.mutex);
    if (!l.free[c].empty()) {
      *out = l.free[c].back();
      l.free[c].pop_back();
      *pooled = true;
      return true;
    }
    // Room for this block if the bound can hold it at all; and never more than the bound kept
    // (it may have been lowered since the blocks joined).
    auto over = [&] {
      return (bytes <= l.max_bytes && l.kept + bytes > l.max_bytes) || l.kept > l.max_bytes;
    };
    for (int v = kClasses - 1; v >= 0 && over(); --v) {
      while (!l.free[v].empty() && over()) {
        evicted.emplace_back(v, l.free[v].back());
        l.free[v].pop_back();
        l.kept -= class_bytes(v);
      }
    }
    *pooled = l.kept + bytes <= l.max_bytes;
    if (*pooled) l.kept += bytes;
  }
  for (const auto& [v, b] : evicted) release(p, class_bytes(v), b);  // outside the lock: may wait
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
  release(p, class_bytes(c), b);
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
  capacity_ = class_bytes(c);
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
