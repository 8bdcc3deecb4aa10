// src/transport/device_ops.h through the GPU runtime API. The library never links the driver
// library (machines without a driver could not load it): the two driver queries that the runtime
// does not offer (an allocation's address range and buffer id) are resolved at run time through the
// runtime's driver entry points.
#include <cstring>
#include <mutex>

#include "src/platform/gpu.h"
#include "src/platform/log.h"
#include "src/transport/device_ops.h"

#if defined(MPIZIP_HIP)
#define gpuIpcMemHandle_t hipIpcMemHandle_t
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define gpuPointerAttributes hipPointerAttribute_t
#define gpuPointerGetAttributes hipPointerGetAttributes
#define gpuMemoryTypeDevice hipMemoryTypeDevice
#else
#include <cudaTypedefs.h>  // driver function types only
#define gpuIpcMemHandle_t cudaIpcMemHandle_t
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define gpuPointerAttributes cudaPointerAttributes
#define gpuPointerGetAttributes cudaPointerGetAttributes
#define gpuMemoryTypeDevice cudaMemoryTypeDevice
#endif

namespace mpizip::transport {

static_assert(sizeof(IpcHandle) == sizeof(gpuIpcMemHandle_t),
              "IpcHandle holds the runtime's handle");

namespace {

// Clears the runtime's last error after a call whose failure is an answer, not a fault.
void forget_error() { (void)gpuGetLastError(); }

#if defined(MPIZIP_HIP)

Status query_allocation(const void* p, Allocation* out) {
  void* base = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;
  if (hipMemGetAddressRange(reinterpret_cast<hipDeviceptr_t*>(&base), &bytes,
                            const_cast<void*>(p)) != hipSuccess ||
      hipPointerGetAttribute(&id, HIP_POINTER_ATTRIBUTE_BUFFER_ID, const_cast<void*>(p)) !=
          hipSuccess) {
    forget_error();
    return Status::kUnsupported;
  }
  *out = Allocation{reinterpret_cast<uint64_t>(base), bytes, id};
  return Status::kOk;
}

bool allocation_queries_available() { return true; }

#else

// cuMemGetAddressRange and cuPointerGetAttribute, resolved once; null where the driver is missing.
struct DriverQueries {
  PFN_cuMemGetAddressRange_v3020 address_range = nullptr;
  PFN_cuPointerGetAttribute_v4000 attribute = nullptr;
};

// A driver function by name, through the runtime; null where the driver lacks it.
void* driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  const cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault,
                                                           &found);
#else
  const cudaError_t err = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    forget_error();
    return nullptr;
  }
  return fn;
}

const DriverQueries& driver_queries() {
  static std::once_flag once;
  static DriverQueries q;
  std::call_once(once, [] {
    void* range = driver_function("cuMemGetAddressRange");
    void* attribute = driver_function("cuPointerGetAttribute");
    if (range != nullptr && attribute != nullptr) {
      q.address_range = reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(range);
      q.attribute = reinterpret_cast<PFN_cuPointerGetAttribute_v4000>(attribute);
    }
  });
  return q;
}

Status query_allocation(const void* p, Allocation* out) {
  const DriverQueries& q = driver_queries();
  if (q.address_range == nullptr) return Status::kUnsupported;
  CUdeviceptr base = 0;
  size_t bytes = 0;
  unsigned long long id = 0;
  const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(p);
  if (q.address_range(&base, &bytes, ptr) != CUDA_SUCCESS ||
      q.attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr) != CUDA_SUCCESS) {
    return Status::kUnsupported;
  }
  *out = Allocation{static_cast<uint64_t>(base), bytes, id};
  return Status::kOk;
}

bool allocation_queries_available() { return driver_queries().address_range != nullptr; }

#endif

}  // namespace

bool ipc_supported() { return platform::has_gpu() && allocation_queries_available(); }

Status find_allocation(const void* p, Allocation* out) {
  if (!ipc_supported()) return Status::kUnsupported;
  gpuPointerAttributes attributes;
  if (gpuPointerGetAttributes(&attributes, p) != gpuSuccess) {
    forget_error();
    return Status::kUnsupported;
  }
  if (attributes.type != gpuMemoryTypeDevice) return Status::kUnsupported;
  return query_allocation(p, out);
}

Status ipc_export(uint64_t base, IpcHandle* out) {
  gpuIpcMemHandle_t handle;
  if (gpuIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)) != gpuSuccess) {
    forget_error();
    return Status::kUnsupported;
  }
  std::memcpy(out->bytes, &handle, sizeof handle);
  return Status::kOk;
}

Status ipc_open(const IpcHandle& handle, void** base) {
  gpuIpcMemHandle_t h;
  std::memcpy(&h, handle.bytes, sizeof h);
  gpuError_t err = gpuIpcOpenMemHandle(base, h, gpuIpcMemLazyEnablePeerAccess);
  if (err != gpuSuccess) {
    MPIZIP_INFO("CUDA IPC: cannot map a peer's allocation: %s", gpuGetErrorString(err));
    forget_error();
    return Status::kUnsupported;
  }
  return Status::kOk;
}

void ipc_close(void* base) {
  if (gpuIpcCloseMemHandle(base) != gpuSuccess) forget_error();
}

}  // namespace mpizip::transport
