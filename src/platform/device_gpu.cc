// src/platform/device.h through the GPU runtime API (never the driver library, so that the library
// loads on machines without a driver: there every runtime call fails and we report no GPU).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <mutex>

#include "src/platform/device.h"
#include "src/platform/gpu.h"
#include "src/platform/gpu_timing.h"
#include "src/platform/log.h"
#include "src/platform/topology.h"

namespace mpizip::platform {
namespace {

// Device count, probed once; 0 when the runtime cannot start.
int device_count(std::string* why) {
  // Asked on every message (is_device_pointer): the answer, once known, costs one load.
  static std::atomic<int> known{-1};
  if (why == nullptr) {
    const int n = known.load(std::memory_order_acquire);
    if (n >= 0) return n;
  }
  static std::once_flag once;
  static int count = 0;
  static std::string reason;
  std::call_once(once, [] {
    gpuError_t err = gpuGetDeviceCount(&count);
    if (err != gpuSuccess) {
      reason = gpuGetErrorString(err);
      count = 0;
      (void)gpuGetLastError();  // clear the sticky-free error so later calls start clean
    } else if (count == 0) {
      reason = "no GPU device";
    }
  });
  if (why != nullptr) *why = reason;
  known.store(count, std::memory_order_release);
  return count;
}

}  // namespace

Status gpu_status(gpuError_t err, const char* what, const char* file, int line) {
  if (err == gpuSuccess) return Status::kOk;
  MPIZIP_ERROR("%s failed at %s:%d: %s", what, file, line, gpuGetErrorString(err));
  return err == gpuErrorMemoryAllocation ? Status::kOutOfMemory : Status::kDeviceError;
}

std::string gpu_backend() {
#if defined(MPIZIP_HIP)
  return "HIP";
#else
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return "CUDA " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
#endif
}

std::vector<GpuInfo> gpus(std::string* why_none) {
  std::vector<GpuInfo> out;
  int n = device_count(why_none);
  for (int i = 0; i < n; ++i) {
#if defined(MPIZIP_HIP)
    hipDeviceProp_t p;
    if (hipGetDeviceProperties(&p, i) != hipSuccess) continue;
#else
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
#endif
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.multiprocessors = p.multiProcessorCount;
    g.cc_major = p.major;
    g.cc_minor = p.minor;
    g.memory_bytes = p.totalGlobalMem;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    g.pci_bus_id = bus;
    out.push_back(g);
  }
  return out;
}

bool has_gpu() { return device_count(nullptr) > 0; }

std::string current_gpu_pci_bus_id() {
  if (!has_gpu()) return "";
  int device = 0;
  if (gpuGetDevice(&device) != gpuSuccess) {
    (void)gpuGetLastError();
    return "";
  }
  // The bus id of each device, asked once (a runtime call per pinned allocation would be waste).
  static const std::vector<GpuInfo> all = gpus(nullptr);
  for (const GpuInfo& g : all) {
    if (g.index == device) return g.pci_bus_id;
  }
  return "";
}

std::string current_gpu_identity() {
  if (!has_gpu()) return "";
#if defined(MPIZIP_HIP)
  return current_gpu_pci_bus_id();
#else
  int device = 0;
  cudaDeviceProp prop;
  if (gpuGetDevice(&device) != gpuSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)gpuGetLastError();
    return current_gpu_pci_bus_id();
  }
  std::string id = "GPU-";
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(prop.uuid.bytes[i]);
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
#endif
}

bool gpu_processes_concurrent() {
  if (!has_gpu()) return false;
#if defined(MPIZIP_HIP)
  return true;
#else
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string pipe = std::string(dir != nullptr && *dir ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st;
  return ::stat(pipe.c_str(), &st) == 0;
#endif
}

Status copy_to_host(void* dst, const void* device_src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  GpuTimer timer(GpuCall::kCopyToHost);
  MPIZIP_GPU_CHECK(gpuMemcpy(dst, device_src, bytes, gpuMemcpyDeviceToHost));
  return Status::kOk;
}

Status copy_to_device(void* device_dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  GpuTimer timer(GpuCall::kCopyToDevice);
  MPIZIP_GPU_CHECK(gpuMemcpy(device_dst, src, bytes, gpuMemcpyHostToDevice));
  // From pageable memory the copy returns once the data is staged, possibly before the DMA lands;
  // wait for it, so that work on any stream afterwards sees the data.
  MPIZIP_GPU_CHECK(gpuStreamSynchronize(0));
  return Status::kOk;
}

Status copy_pinned_to_device(void* device_dst, const void* pinned_src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  GpuTimer timer(GpuCall::kCopyPinnedToDevice);
  MPIZIP_GPU_CHECK(gpuMemcpy(device_dst, pinned_src, bytes, gpuMemcpyHostToDevice));
  return Status::kOk;
}

Status copy_device_to_device(void* device_dst, const void* device_src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  GpuTimer timer(GpuCall::kCopyDeviceToDevice);
  MPIZIP_GPU_CHECK(gpuMemcpy(device_dst, device_src, bytes, gpuMemcpyDeviceToDevice));
  return Status::kOk;
}

namespace {

// The calling thread's pinned buffer for small copies to and from pageable memory (allocated on
// first use, kept for the thread's life); null where pinned memory cannot be had.
constexpr uint64_t kBounceBytes = uint64_t{1} << 20;
uint8_t* bounce_buffer() {
  thread_local uint8_t* buffer = nullptr;
  thread_local bool tried = false;
  if (!tried) {
    tried = true;
    buffer = static_cast<uint8_t*>(pinned_alloc(kBounceBytes));
  }
  return buffer;
}

}  // namespace

Status copy_to_pageable_host(void* dst, const void* device_src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  uint8_t* bounce = bytes <= kBounceBytes ? bounce_buffer() : nullptr;
  if (bounce == nullptr) return copy_to_host(dst, device_src, bytes);
  {
    GpuTimer timer(GpuCall::kCopyToHost);
    MPIZIP_GPU_CHECK(gpuMemcpy(bounce, device_src, bytes, gpuMemcpyDeviceToHost));
  }
  std::memcpy(dst, bounce, bytes);
  return Status::kOk;
}

Status copy_from_pageable_host(void* device_dst, const void* src, uint64_t bytes) {
  if (bytes == 0) return Status::kOk;
  uint8_t* bounce = bytes <= kBounceBytes ? bounce_buffer() : nullptr;
  if (bounce == nullptr) return copy_to_device(device_dst, src, bytes);
  std::memcpy(bounce, src, bytes);
  return copy_pinned_to_device(device_dst, bounce, bytes);
}

void* pinned_alloc(uint64_t bytes) {
  if (bytes == 0 || !has_gpu()) return nullptr;
  // On the NUMA node nearest the GPU, which copies it to and from (hwloc; topology.h).
  return allocate_near(current_gpu_pci_bus_id(), [bytes]() -> void* {
    void* p = nullptr;
    if (gpuMallocHost(&p, bytes) != gpuSuccess) {
      (void)gpuGetLastError();
      return nullptr;
    }
    return p;
  });
}

void pinned_free(void* p) {
  if (p != nullptr) (void)gpuFreeHost(p);
}

void* device_alloc(uint64_t bytes) {
  if (bytes == 0 || !has_gpu()) return nullptr;
  void* p = nullptr;
  if (gpuMalloc(&p, bytes) != gpuSuccess) {
    (void)gpuGetLastError();
    return nullptr;
  }
  return p;
}

void device_free(void* p) {
  if (p != nullptr) (void)gpuFree(p);
}

namespace {

gpuError_t raw_alloc(MemoryKind kind, void** p, uint64_t bytes) {
  return kind == MemoryKind::kDevice ? gpuMalloc(p, bytes) : gpuMallocHost(p, bytes);
}

gpuError_t raw_free(MemoryKind kind, void* p) {
  return kind == MemoryKind::kDevice ? gpuFree(p) : gpuFreeHost(p);
}

}  // namespace

template <MemoryKind kKind>
GpuMemory<kKind>::~GpuMemory() {
  if (ptr_ != nullptr) (void)raw_free(kKind, ptr_);
}

template <MemoryKind kKind>
Status GpuMemory<kKind>::allocate(uint64_t bytes) {
  if (bytes == 0) {
    if (ptr_ != nullptr) (void)raw_free(kKind, ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    return Status::kOk;
  }
  // The new block first: when memory is short the old one stays, and the caller, which falls
  // back and says so once, is the only one to speak of it (no error line per attempt).
  void* p = nullptr;
  gpuError_t err = raw_alloc(kKind, &p, bytes);
  if (err == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();
    return Status::kOutOfMemory;
  }
  MPIZIP_GPU_CHECK(err);
  if (ptr_ != nullptr) (void)raw_free(kKind, ptr_);
  ptr_ = p;
  bytes_ = bytes;
  return Status::kOk;
}

template class GpuMemory<MemoryKind::kDevice>;
template class GpuMemory<MemoryKind::kPinnedHost>;

Stream::~Stream() {
  if (handle_ != nullptr) (void)gpuStreamDestroy(static_cast<gpuStream_t>(handle_));
}

Status Stream::create(Order order) {
  gpuStream_t s;
  MPIZIP_GPU_CHECK(gpuStreamCreateWithFlags(
      &s, order == Order::kBlocking ? gpuStreamDefault : gpuStreamNonBlocking));
  handle_ = s;
  return Status::kOk;
}

Status Stream::wait_for_default_stream() {
  // One event per thread, re-recorded each time: the wait captures the work queued before it.
  thread_local Event marker;
  Stream legacy;  // never created: get() is the null stream, the legacy default stream
  MPIZIP_CHECK(marker.record(legacy));
  MPIZIP_GPU_CHECK(gpuStreamWaitEvent(static_cast<gpuStream_t>(handle_),
                                      static_cast<gpuEvent_t>(marker.get()), 0));
  return Status::kOk;
}

Status synchronize_default_stream() {
  GpuTimer timer(GpuCall::kDefaultStreamSync);
  MPIZIP_GPU_CHECK(gpuStreamSynchronize(0));
  return Status::kOk;
}

Status Stream::synchronize() {
  GpuTimer timer(GpuCall::kStreamSync);
  MPIZIP_GPU_CHECK(gpuStreamSynchronize(static_cast<gpuStream_t>(handle_)));
  return Status::kOk;
}

Event::~Event() {
  if (event_ != nullptr) (void)gpuEventDestroy(static_cast<gpuEvent_t>(event_));
}

Status Event::record(const Stream& stream) {
  GpuTimer timer(GpuCall::kEventRecord);
  if (event_ == nullptr) {
    gpuEvent_t e;
    MPIZIP_GPU_CHECK(gpuEventCreateWithFlags(&e, gpuEventDisableTiming));
    event_ = e;
  }
  MPIZIP_GPU_CHECK(gpuEventRecord(static_cast<gpuEvent_t>(event_),
                                  static_cast<gpuStream_t>(stream.get())));
  return Status::kOk;
}

Status Event::query(bool* done) {
  if (event_ == nullptr) return Status::kInvalidArgument;
  GpuTimer timer(GpuCall::kEventQuery);
  gpuError_t err = gpuEventQuery(static_cast<gpuEvent_t>(event_));
  if (err == gpuErrorNotReady) {
    (void)gpuGetLastError();
    *done = false;
    return Status::kOk;
  }
  MPIZIP_GPU_CHECK(err);
  *done = true;
  return Status::kOk;
}

Status Event::wait() {
  if (event_ == nullptr) return Status::kInvalidArgument;
  GpuTimer timer(GpuCall::kEventWait);
  MPIZIP_GPU_CHECK(gpuEventSynchronize(static_cast<gpuEvent_t>(event_)));
  return Status::kOk;
}

Status copy_async(void* dst, const void* src, uint64_t bytes, const Stream& stream) {
  if (bytes == 0) return Status::kOk;
  GpuTimer timer(GpuCall::kCopyAsync);
  MPIZIP_GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault,
                                  static_cast<gpuStream_t>(stream.get())));
  return Status::kOk;
}

}  // namespace mpizip::platform
