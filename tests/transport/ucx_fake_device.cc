// A stand-in for the GPU runtime in tests/transport/ucx_staged_test: "device" memory is host memory
// and the staging copies are memcpy, so that the UCX transport's staging of device buffers (host
// buffers from the pinned pool, copy streams, events, double buffering) runs on machines without a
// GPU. It replaces the part of src/platform/device.h that the transport, the staging pool and the
// test use.
//
// Copies are late on purpose: a queued copy runs only when an event recorded after it is queried
// for the second time, as a GPU copy that is still running would. A pipeline that
// touched a host buffer before its copy had finished would send or deliver stale bytes, and the
// test would see them.
#include <cstdlib>
#include <cstring>
#include <deque>

#include "src/platform/device.h"

namespace {

struct Copy {
  void* dst;
  const void* src;
  uint64_t bytes;
};

// A stream: copies queued, and how many of all those ever queued have run.
struct Queue {
  std::deque<Copy> pending;
  uint64_t queued = 0;
  uint64_t run = 0;
};

// An event: the number of copies queued on `queue` when it was recorded.
struct Marker {
  Queue* queue = nullptr;
  uint64_t after = 0;
  int queries = 0;
};

// Runs the copies of the marker's queue up to the marker.
void run_until(const Marker& m) {
  while (m.queue->run < m.after) {
    Copy c = m.queue->pending.front();
    m.queue->pending.pop_front();
    std::memcpy(c.dst, c.src, c.bytes);
    ++m.queue->run;
  }
}

}  // namespace

namespace mpizip::platform {

bool has_gpu() { return true; }
std::string current_gpu_pci_bus_id() { return ""; }

Status copy_to_host(void* dst, const void* device_src, uint64_t bytes) {
  if (bytes > 0) std::memcpy(dst, device_src, bytes);
  return Status::kOk;
}

Status copy_to_device(void* device_dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memcpy(device_dst, src, bytes);
  return Status::kOk;
}

Status copy_pinned_to_device(void* device_dst, const void* src, uint64_t bytes) {
  return copy_to_device(device_dst, src, bytes);
}

// Pinned and device memory of the stand-in: heap memory (the pools of src/platform/buffers.cc,
// which the staging pool draws on, allocate through these).
void* pinned_alloc(uint64_t bytes) { return bytes > 0 ? std::malloc(bytes) : nullptr; }
void pinned_free(void* p) { std::free(p); }
void* device_alloc(uint64_t bytes) { return bytes > 0 ? std::malloc(bytes) : nullptr; }
void device_free(void* p) { std::free(p); }

template <MemoryKind kKind>
GpuMemory<kKind>::~GpuMemory() {
  std::free(ptr_);
}

template <MemoryKind kKind>
Status GpuMemory<kKind>::allocate(uint64_t bytes) {
  std::free(ptr_);
  ptr_ = bytes > 0 ? std::malloc(bytes) : nullptr;
  bytes_ = ptr_ != nullptr ? bytes : 0;
  return bytes == 0 || ptr_ != nullptr ? Status::kOk : Status::kOutOfMemory;
}

template class GpuMemory<MemoryKind::kDevice>;
template class GpuMemory<MemoryKind::kPinnedHost>;

Stream::~Stream() { delete static_cast<Queue*>(handle_); }

Status Stream::create(Order) {
  handle_ = new Queue;
  return Status::kOk;
}

// Nothing to wait for: the test fills its "device" buffers with memcpy, which queues nothing.
Status Stream::wait_for_default_stream() { return Status::kOk; }

Event::~Event() { delete static_cast<Marker*>(event_); }

Status Event::record(const Stream& stream) {
  if (event_ == nullptr) event_ = new Marker;
  auto* m = static_cast<Marker*>(event_);
  m->queue = static_cast<Queue*>(stream.get());
  m->after = m->queue->queued;
  m->queries = 0;
  return Status::kOk;
}

Status Event::query(bool* done) {
  auto* m = static_cast<Marker*>(event_);
  if (m->queue->run < m->after && ++m->queries >= 2) run_until(*m);
  *done = m->queue->run >= m->after;
  return Status::kOk;
}

Status copy_async(void* dst, const void* src, uint64_t bytes, const Stream& stream) {
  auto* q = static_cast<Queue*>(stream.get());
  q->pending.push_back({dst, src, bytes});
  ++q->queued;
  return Status::kOk;
}

}  // namespace mpizip::platform
