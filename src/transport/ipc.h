// CUDA IPC between the ranks of one node: a sender describes its device buffer (the allocation's
// exported handle, the buffer's offset in it, the allocation's identity), the receiver maps the
// allocation through a cache and copies out of it with the GPU's copy engines. The PMPI transport
// carries the description in a transfer's header (pmpi.h) and falls back to staging when either
// side cannot use IPC.
//
// Mapping cache. Opening a handle costs a driver call and a mapping, so the receiver keeps its
// mappings, keyed by (exporting process, allocation base), and remembers the allocation's buffer id
// (a number the driver never reuses within a process) and size. A description whose id differs
// names a new allocation at a freed one's address: the old mapping is dropped (closed as soon as no
// copy uses it) and the new handle opened, so a buffer freed and reallocated at the same address
// never reads the old memory. The cache keeps at most kMaxMappings mappings that no copy uses,
// evicting the least recently used.
//
// Limitation: a cached mapping outlives the sender's use of its memory. CUDA calls freeing exported
// memory while an importer keeps it mapped undefined; in practice the driver releases the memory
// when the last mapping goes, which is what the CUDA IPC caches of UCX and of the MPI libraries
// rely on too. Until then freed memory stays allocated: at most kMaxMappings allocations per
// process, and none once every transport is gone (the cache is freed with the last one).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>

#include "src/platform/status.h"
#include "src/transport/device_ops.h"

namespace mpizip::transport {

// Everything a receiver needs to map a sender's device buffer. Plain bytes on the wire.
struct IpcDescriptor {
  uint64_t process = 0;  // the exporting process, process_id()
  uint64_t base = 0;     // the allocation's address in the exporting process
  uint64_t bytes = 0;    // the allocation's size
  uint64_t id = 0;       // the allocation's buffer id in the exporting process
  uint64_t offset = 0;   // the buffer's offset in the allocation
  IpcHandle handle{};
};

// A random identity of this process, drawn once: tells exporters apart across communicators and
// process-id namespaces.
uint64_t process_id();

// Describes the device buffer [p, p + bytes) for a peer to map. kUnsupported when CUDA IPC cannot
// share it (host or managed memory, memory outside cudaMalloc's reach, no GPU). Exported handles
// are remembered per allocation, so describing the same buffer again costs two driver queries.
Status ipc_describe(const void* p, uint64_t bytes, IpcDescriptor* out);

// A peer's buffer mapped into this process, held by a copy while it reads from it.
class IpcMapping {
 public:
  const void* address() const { return address_; }

 private:
  friend class IpcCache;
  std::shared_ptr<void> mapping_;  // the cache's mapping of the allocation; null for this process's
  const void* address_ = nullptr;
};

// The process's mappings of its peers' allocations, shared by every transport that holds it and
// closed with the last one.
class IpcCache {
 public:
  static std::shared_ptr<IpcCache> shared();

  // Maps the buffer `d` describes (a buffer of this process itself needs no mapping).
  // kUnsupported when the handle cannot be opened here.
  Status map(const IpcDescriptor& d, IpcMapping* out);

 private:
  struct Key {
    uint64_t process;
    uint64_t base;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    uint64_t id;
    uint64_t bytes;
    std::shared_ptr<void> mapping;
    std::list<Key>::iterator recent;  // its place in recent_
  };
  void evict_unused();

  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::list<Key> recent_;  // most recently used first
};

constexpr size_t kMaxMappings = 64;

}  // namespace mpizip::transport
