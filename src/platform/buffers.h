// Memory for staging, compressed payloads and codec scratch, reused from message to message.
// Taking fresh pages for every message costs a page fault per 4 KiB, pageable memory costs the GPU
// runtime an extra copy, and cudaMalloc / cudaFree synchronise the device; so a buffer instead
// takes a block from a process-wide pool of blocks (four sizes per power of two):
//   HostBuffer    pinned host memory (heap memory where pinning fails or there is no GPU);
//   DeviceBuffer  device memory of the current GPU.
// Each pool keeps at most a bound of bytes (buffers_configure); free blocks of other sizes are
// released to make room for a new one, and to bring the pool under a bound that was lowered. Beyond it, blocks are allocated for the one use and freed
// after it, so a large message still goes through, only slower.
#pragma once

#include <cstdint>

#include "src/platform/status.h"

namespace mpizip::platform {

// Bounds of the host and device pools, in bytes. Call before first use.
void buffers_configure(uint64_t host_pool_bytes, uint64_t device_pool_bytes);

// Pinned host bytes the host pool holds now (for statistics and mpizip-info).
uint64_t pinned_pool_bytes();

enum class Pool { kHost, kDevice };

template <Pool kPool>
class PooledBuffer {
 public:
  PooledBuffer() = default;
  ~PooledBuffer() { clear(); }
  PooledBuffer(PooledBuffer&& o) noexcept { *this = static_cast<PooledBuffer&&>(o); }
  PooledBuffer& operator=(PooledBuffer&& o) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;

  // Makes the buffer `bytes` long. Contents are kept when the block does not change (shrinking,
  // or growing within the block's capacity); a larger request takes a new block and the old
  // contents are lost. kOutOfMemory when no memory is left (kNoDevice: device buffer, no GPU).
  Status resize(uint64_t bytes);
  // Gives the block back.
  void clear();

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Host buffers: whether the block is pinned (device copies run at full speed).
  bool pinned() const { return pinned_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
  bool pinned_ = false;
  bool pooled_ = false;  // counted against the pool's bound: returns to its free list
};

using HostBuffer = PooledBuffer<Pool::kHost>;
using DeviceBuffer = PooledBuffer<Pool::kDevice>;

// Scratch memory in device or host memory, from the pools: `data` is the block taken last.
struct Scratch {
  DeviceBuffer device;
  HostBuffer host;
  uint8_t* data = nullptr;
  Status take(uint64_t bytes, bool on_device) {
    const Status s = on_device ? device.resize(bytes) : host.resize(bytes);
    data = ok(s) ? (on_device ? device.data() : host.data()) : nullptr;
    return s;
  }
};

}  // namespace mpizip::platform
