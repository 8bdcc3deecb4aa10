// src/transport/device_ops.h for builds without a GPU backend: there is no device memory to copy
// or share.
#include "src/transport/device_ops.h"

namespace mpizip::transport {

bool ipc_supported() { return false; }
Status find_allocation(const void*, Allocation*) { return Status::kUnsupported; }
Status ipc_export(uint64_t, IpcHandle*) { return Status::kUnsupported; }
Status ipc_open(const IpcHandle&, void**) { return Status::kUnsupported; }
void ipc_close(void*) {}

}  // namespace mpizip::transport
