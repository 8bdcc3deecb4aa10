// Where a buffer lives, asked on every point-to-point call: answered from a per-thread cache in a
// few instructions, from the GPU driver (a few hundred nanoseconds) only on a miss.
//
// A cached answer is valid while the process's address space has not changed: a page that was host
// memory can become device memory only by being unmapped and mapped again, and every new mapping
// a GPU driver makes goes through the C library's mmap, mremap or munmap, which this library
// interposes (as UCX's memory hooks do) to count changes. A change empties every thread's cache
// at once (each entry carries the count it was valid for). The driver does reuse unmapped host
// ranges for device memory (seen on the H200 machine: 8 of 8 tries in tests/gpu/pointer_kind_test),
// which is why the count is needed. Mappings made inside the C library itself (malloc's) are not
// counted: they only ever make host memory, which a cached "device"
// entry could not be (the driver keeps its device ranges reserved). tests/gpu/pointer_kind.cc
// checks on a GPU that every allocation call that adds an address range to the process counts.
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>

#include "src/platform/device.h"
#include "src/platform/gpu.h"
#include "src/platform/gpu_timing.h"
#include "src/platform/page_cache.h"

#if !defined(MPIZIP_HIP)
#include <cuda.h>
#endif

namespace mpizip::platform {
namespace {

std::atomic<uint64_t> g_generation{1};

inline void address_space_changed() { g_generation.fetch_add(1, std::memory_order_relaxed); }

#if !defined(MPIZIP_HIP)
// The driver's cuPointerGetAttributes, found once in the driver library the runtime has loaded
// (has_gpu() asked the runtime first). Unlike the runtime's cudaPointerGetAttributes it never
// creates a context: a process that only ever sends host buffers keeps having none (a context
// in every rank would make the job a different one from the application's own: more threads,
// more memory, and a GPU the ranks share without MPS switching between them).
using DriverPointerAttributes = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
DriverPointerAttributes driver_pointer_attributes() {
  static const DriverPointerAttributes fn = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return lib == nullptr ? nullptr
                          : reinterpret_cast<DriverPointerAttributes>(dlsym(lib, "cuPointerGetAttributes"));
  }();
  return fn;
}
#endif

bool ask_runtime(const void* p) {
#if defined(MPIZIP_HIP)
  hipPointerAttribute_t a;
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
  return a.type == hipMemoryTypeDevice || a.type == hipMemoryTypeManaged;
#else
  if (const DriverPointerAttributes query = driver_pointer_attributes()) {
    // Memory no context knows of reads as type 0 and not managed (CUDA_SUCCESS all the same).
    unsigned type = 0;
    unsigned managed = 0;
    CUpointer_attribute which[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* into[2] = {&type, &managed};
    if (query(2, which, into, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return false;
    return type == CU_MEMORYTYPE_DEVICE || managed != 0;
  }
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
#endif
}

constexpr unsigned kPageShift = 12;

}  // namespace

uint64_t address_space_generation() { return g_generation.load(std::memory_order_relaxed); }

bool is_device_pointer(const void* p) {
  if (p == nullptr || !has_gpu()) return false;
  static thread_local __attribute__((tls_model("initial-exec"))) PageCache cache;
  const auto page = reinterpret_cast<uintptr_t>(p) >> kPageShift;
  const uint64_t now = g_generation.load(std::memory_order_acquire);
  const int known = cache.find(page, now);
  if (known >= 0) [[likely]] return known != 0;
  bool device;
  {
    GpuTimer timer(GpuCall::kPointerQuery);
    device = ask_runtime(p);
  }
  // The runtime may itself have mapped memory while answering (its first call does): cache the
  // answer only when nothing changed meanwhile.
  if (g_generation.load(std::memory_order_acquire) == now) cache.put(page, now, device);
  return device;
}

bool is_device_pointer_uncached(const void* p) {
  return p != nullptr && has_gpu() && ask_runtime(p);
}

}  // namespace mpizip::platform

// The entry points that change the address space, counted, then handed to the next definition in
// the search order (the C library's, or another library's hook over it, such as an MPI library's or
// UCX's memory hooks, which must still see every call); the system call itself only while that
// definition is being looked up (dlsym may map memory).
namespace {

template <typename Fn>
Fn next_definition(const char* name, std::atomic<void*>* slot) {
  void* f = slot->load(std::memory_order_acquire);
  if (f == nullptr) {
    static thread_local bool resolving = false;
    if (resolving) return nullptr;
    resolving = true;
    f = dlsym(RTLD_NEXT, name);
    resolving = false;
    slot->store(f, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(f);
}

using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
std::atomic<void*> g_next_mmap{nullptr};
std::atomic<void*> g_next_mmap64{nullptr};
std::atomic<void*> g_next_munmap{nullptr};
std::atomic<void*> g_next_mremap{nullptr};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  mpizip::platform::address_space_changed();
  if (auto f = next_definition<MmapFn>("mmap", &g_next_mmap)) {
    return f(addr, length, prot, flags, fd, offset);
  }
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
}

__attribute__((visibility("default"))) void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  mpizip::platform::address_space_changed();
  if (auto f = next_definition<MmapFn>("mmap64", &g_next_mmap64)) {
    return f(addr, length, prot, flags, fd, offset);
  }
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
}

__attribute__((visibility("default"))) int munmap(void* addr, size_t length) {
  mpizip::platform::address_space_changed();
  if (auto f = next_definition<MunmapFn>("munmap", &g_next_munmap)) return f(addr, length);
  return static_cast<int>(syscall(SYS_munmap, addr, length));
}

__attribute__((visibility("default"))) void* mremap(void* old_address, size_t old_size, size_t new_size, int flags, ...) {
  mpizip::platform::address_space_changed();
  void* new_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_address = va_arg(ap, void*);
    va_end(ap);
  }
  if (auto f = next_definition<MremapFn>("mremap", &g_next_mremap)) {
    return f(old_address, old_size, new_size, flags, new_address);
  }
  return reinterpret_cast<void*>(
      syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address));
}

}  // extern "C"
