// src/platform/device.h for builds without a GPU backend.
#include "src/platform/device.h"

namespace mpizip::platform {

std::string gpu_backend() { return "none"; }

std::vector<GpuInfo> gpus(std::string* why_none) {
  if (why_none != nullptr) *why_none = "built without CUDA or HIP";
  return {};
}

bool has_gpu() { return false; }
std::string current_gpu_pci_bus_id() { return ""; }

std::string current_gpu_identity() { return ""; }
bool gpu_processes_concurrent() { return false; }

bool is_device_pointer(const void*) { return false; }
bool is_device_pointer_uncached(const void*) { return false; }
uint64_t address_space_generation() { return 0; }

Status copy_to_host(void*, const void*, uint64_t) { return Status::kNoDevice; }
Status copy_to_device(void*, const void*, uint64_t) { return Status::kNoDevice; }
Status copy_pinned_to_device(void*, const void*, uint64_t) { return Status::kNoDevice; }
Status copy_to_pageable_host(void*, const void*, uint64_t) { return Status::kNoDevice; }
Status copy_from_pageable_host(void*, const void*, uint64_t) { return Status::kNoDevice; }
Status copy_device_to_device(void*, const void*, uint64_t) { return Status::kNoDevice; }

void* pinned_alloc(uint64_t) { return nullptr; }
void pinned_free(void*) {}
void* device_alloc(uint64_t) { return nullptr; }
void device_free(void*) {}

template <MemoryKind kKind>
GpuMemory<kKind>::~GpuMemory() = default;
template <MemoryKind kKind>
Status GpuMemory<kKind>::allocate(uint64_t) {
  return Status::kNoDevice;
}
template class GpuMemory<MemoryKind::kDevice>;
template class GpuMemory<MemoryKind::kPinnedHost>;
Stream::~Stream() = default;
Status Stream::create(Order) { return Status::kNoDevice; }
Status Stream::synchronize() { return Status::kNoDevice; }
Status Stream::wait_for_default_stream() { return Status::kNoDevice; }
Status synchronize_default_stream() { return Status::kNoDevice; }
Event::~Event() = default;
Status Event::record(const Stream&) { return Status::kNoDevice; }
Status Event::query(bool*) { return Status::kNoDevice; }
Status Event::wait() { return Status::kNoDevice; }
Status copy_async(void*, const void*, uint64_t, const Stream&) { return Status::kNoDevice; }

}  // namespace mpizip::platform
