// What the transports need from the GPU runtime beyond src/platform/device.h (streams, events,
// asynchronous copies): CUDA IPC (finding a device buffer's allocation, exporting
// it, mapping a peer's). CUDA-free: device_ops_gpu.cc implements it with the runtime API, and
// device_ops_none.cc answers kNoDevice in builds without a GPU backend.
#pragma once

#include <cstdint>

#include "src/platform/device.h"
#include "src/platform/status.h"

namespace mpizip::transport {

// The device allocation that holds a buffer. `id` is the driver's buffer id: unique within the
// process over its lifetime, so a freed allocation and a later one at the same address differ.
struct Allocation {
  uint64_t base = 0;
  uint64_t bytes = 0;
  uint64_t id = 0;
};

// An exported allocation, as the runtime's opaque handle.
struct IpcHandle {
  unsigned char bytes[64];
};

// True when this process can export and map device allocations: a GPU is present and the driver
// answers allocation queries. Probed once.
bool ipc_supported();

// The allocation that holds the device buffer `p`. kUnsupported for memory that CUDA IPC cannot
// share (host, managed, or no GPU).
Status find_allocation(const void* p, Allocation* out);

// Exports the allocation at `base` (from find_allocation). kUnsupported when the runtime refuses
// (memory from a pool or a virtual-memory reservation, for instance).
Status ipc_export(uint64_t base, IpcHandle* out);

// Maps a peer's exported allocation into this process; `*base` is its address here. Each
// successful open is undone by one ipc_close(). kUnsupported when the handle cannot be opened
// (another node's, a device this process cannot reach).
Status ipc_open(const IpcHandle& handle, void** base);
void ipc_close(void* base);

}  // namespace mpizip::transport
