// What the process can ask about GPUs without including a GPU runtime header. A build without a GPU
// backend, a machine without a driver, or a runtime that fails to start all read as "no GPU": the
// library carries on with its CPU paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/platform/status.h"

namespace mpizip::platform {

struct GpuInfo {
  int index = 0;
  std::string name;
  int multiprocessors = 0;
  int cc_major = 0;  // compute capability (CUDA) or gfx major (HIP)
  int cc_minor = 0;
  uint64_t memory_bytes = 0;
  std::string pci_bus_id;
};

// The GPU backend this library was built with: "CUDA <runtime version>", "HIP", or "none".
std::string gpu_backend();

// The visible GPUs; empty with the reason in `why_none` when there are none.
std::vector<GpuInfo> gpus(std::string* why_none);

// True when this process sees a GPU (probed once; cheap after the first call).
bool has_gpu();

// The PCI bus id ("0000:19:00.0") of the calling thread's current GPU; empty without one.
std::string current_gpu_pci_bus_id();

// The identity of the calling thread's current GPU, the same in every process that uses that GPU:
// its UUID ("GPU-3f2a...", CUDA) or its PCI bus id (HIP); empty without one.
std::string current_gpu_identity();

// Whether kernels of different processes on one GPU run side by side: on CUDA only under MPS,
// whose control pipe the driver connects to at start-up (CUDA_MPS_PIPE_DIRECTORY, by default
// /tmp/nvidia-mps; the pipe `control` there); otherwise the driver time-slices the processes'
// contexts, and a kernel that waits for another process's kernel waits a time slice or more. On
// HIP, yes (the hardware schedules several processes' queues). False without a GPU.
bool gpu_processes_concurrent();

// True when `p` points to device memory (or managed memory) of any GPU. False for host memory and
// in builds or processes without a GPU. Cached per thread and page while the address space does
// not change (pointer_kind.cc): a few instructions when the answer is known.
bool is_device_pointer(const void* p);
// The same, always asked of the GPU runtime (for tests of the cache).
bool is_device_pointer_uncached(const void* p);
// Changes to the process's address space counted so far (mmap, mremap, munmap through the C
// library); constant in builds without a GPU.
uint64_t address_space_generation();

// Blocking copies between host and device memory (the current device). kNoDevice in builds or
// processes without a GPU, kDeviceError when the runtime fails.
Status copy_to_host(void* dst, const void* device_src, uint64_t bytes);
Status copy_to_device(void* device_dst, const void* src, uint64_t bytes);
// As copy_to_device, from page-locked memory (pinned_alloc): the runtime's copy is then synchronous
// with the host by itself, so no stream synchronisation follows it.
Status copy_pinned_to_device(void* device_dst, const void* pinned_src, uint64_t bytes);
// As copy_to_host and copy_to_device, for host memory known to be pageable (not pinned_alloc's):
// copies of at most 1 MiB go through a pinned buffer of the calling thread's, since the runtime's
// own path for pageable memory costs 2-21 us more a copy at 4-64 KiB (osu-bench/ipc_latency, H100
// with MPS: osu-bench/results/README.md, 2026-12-07); larger ones as copy_to_host / copy_to_device.
Status copy_to_pageable_host(void* dst, const void* device_src, uint64_t bytes);
Status copy_from_pageable_host(void* device_dst, const void* src, uint64_t bytes);
Status copy_device_to_device(void* device_dst, const void* device_src, uint64_t bytes);

// Page-locked host memory and device memory straight from the GPU runtime (for the pools of
// src/platform/buffers.h). nullptr in builds or processes without a GPU, or when the runtime
// refuses.
void* pinned_alloc(uint64_t bytes);
void pinned_free(void* p);
void* device_alloc(uint64_t bytes);
void device_free(void* p);

// Device and pinned host memory, and a stream, owned RAII-style. A default-constructed object
// holds nothing; allocate() replaces what it holds.
enum class MemoryKind { kDevice, kPinnedHost };

template <MemoryKind kKind>
class GpuMemory {
 public:
  GpuMemory() = default;
  ~GpuMemory();
  GpuMemory(const GpuMemory&) = delete;
  GpuMemory& operator=(const GpuMemory&) = delete;
  // Replaces the allocation with one of `bytes` (0: none). kOutOfMemory, quietly and keeping the
  // old allocation, when the memory is not there.
  Status allocate(uint64_t bytes);
  // Keeps the allocation when it is already large enough.
  Status reserve(uint64_t bytes) { return bytes <= bytes_ ? Status::kOk : allocate(bytes); }
  void* get() const { return ptr_; }
  uint64_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  uint64_t bytes_ = 0;
};

using DeviceMemory = GpuMemory<MemoryKind::kDevice>;
using PinnedMemory = GpuMemory<MemoryKind::kPinnedHost>;

class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  // blocking: work on the stream waits for earlier work of the legacy default stream (such as the
  // application's cudaMemcpy into a buffer it then sends), and the legacy stream waits for it.
  // independent: neither waits for the other (see wait_for_default_stream).
  enum class Order { kBlocking, kIndependent };
  Status create(Order order = Order::kBlocking);
  Status synchronize();
  // Makes work queued on this stream from now on wait for the work queued so far on the legacy
  // default stream (the application's cudaMemcpy into a buffer it then sends, say).
  Status wait_for_default_stream();
  void* get() const { return handle_; }  // a cudaStream_t / hipStream_t

 private:
  void* handle_ = nullptr;
};

// Marks the completion of the work queued on a stream before record() (a GPU event, created on
// first use). Lets the host poll a stage of a pipeline instead of synchronising.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Status record(const Stream& stream);
  // kOk with *done = true once the recorded work has finished; kDeviceError when it failed.
  Status query(bool* done);
  // Blocks until the recorded work has finished.
  Status wait();
  void* get() const { return event_; }  // a cudaEvent_t / hipEvent_t, null before record()

 private:
  void* event_ = nullptr;
};

// Waits until the work queued so far on the legacy default stream has finished: a buffer the
// application filled with a blocking cudaMemcpy from pageable memory may still be in flight when
// that call returns, and another process reads it through CUDA IPC without any stream order.
Status synchronize_default_stream();

// Queues a copy of `bytes` between any two of host (pinned or pageable) and device memory on
// `stream`.
Status copy_async(void* dst, const void* src, uint64_t bytes, const Stream& stream);

}  // namespace mpizip::platform
