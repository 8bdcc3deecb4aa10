#include "src/transport/ipc.h"

#include <unistd.h>

#include <chrono>
#include <random>
#include <utility>

namespace mpizip::transport {
namespace {

// The handles this process exported, by allocation base. A handle holds no resource, so the table
// is simply emptied when it grows past kMaxExports.
constexpr size_t kMaxExports = 256;

struct Exported {
  uint64_t id;
  IpcHandle handle;
};

struct ExportTable {
  std::mutex mutex;
  std::map<uint64_t, Exported> by_base;
};

ExportTable& export_table() {
  static ExportTable table;
  return table;
}

// The handle of allocation `a`, exported on first use.
Status export_handle(const Allocation& a, IpcHandle* out) {
  ExportTable& t = export_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.by_base.find(a.base);
  if (it != t.by_base.end() && it->second.id == a.id) {
    *out = it->second.handle;
    return Status::kOk;
  }
  MPIZIP_CHECK(ipc_export(a.base, out));
  if (t.by_base.size() >= kMaxExports) t.by_base.clear();
  t.by_base[a.base] = Exported{a.id, *out};
  return Status::kOk;
}

}  // namespace

uint64_t process_id() {
  static const uint64_t id = [] {
    std::random_device entropy;
    std::seed_seq seed{entropy(), entropy(), static_cast<unsigned>(getpid()),
                       static_cast<unsigned>(
                           std::chrono::steady_clock::now().time_since_epoch().count())};
    std::mt19937_64 g(seed);
    return g();
  }();
  return id;
}

Status ipc_describe(const void* p, uint64_t bytes, IpcDescriptor* out) {
  Allocation a;
  MPIZIP_CHECK(find_allocation(p, &a));
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  if (address < a.base || address - a.base > a.bytes || bytes > a.bytes - (address - a.base)) {
    return Status::kUnsupported;  // the buffer runs past its allocation
  }
  IpcDescriptor d;
  MPIZIP_CHECK(export_handle(a, &d.handle));
  d.process = process_id();
  d.base = a.base;
  d.bytes = a.bytes;
  d.id = a.id;
  d.offset = address - a.base;
  *out = d;
  return Status::kOk;
}

std::shared_ptr<IpcCache> IpcCache::shared() {
  static std::mutex mutex;
  static std::weak_ptr<IpcCache> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<IpcCache> cache = current.lock();
  if (cache == nullptr) {
    cache = std::make_shared<IpcCache>();
    current = cache;
  }
  return cache;
}

Status IpcCache::map(const IpcDescriptor& d, IpcMapping* out) {
  if (d.process == process_id()) {  // this process's own buffer (a transfer to itself)
    out->mapping_.reset();
    out->address_ = reinterpret_cast<const void*>(d.base + d.offset);
    return Status::kOk;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const Key key{d.process, d.base};
  auto it = entries_.find(key);
  if (it != entries_.end() && (it->second.id != d.id || it->second.bytes != d.bytes)) {
    // A new allocation at a freed one's address: the old mapping closes once no copy holds it.
    recent_.erase(it->second.recent);
    entries_.erase(it);
    it = entries_.end();
  }
  const bool opened = it == entries_.end();
  if (opened) {
    void* base = nullptr;
    MPIZIP_CHECK(ipc_open(d.handle, &base));
    std::shared_ptr<void> mapping(base, [](void* b) { ipc_close(b); });
    recent_.push_front(key);
    it = entries_.emplace(key, Entry{d.id, d.bytes, std::move(mapping), recent_.begin()}).first;
  } else {
    recent_.splice(recent_.begin(), recent_, it->second.recent);
  }
  out->mapping_ = it->second.mapping;
  out->address_ = static_cast<const char*>(it->second.mapping.get()) + d.offset;
  if (opened) evict_unused();
  return Status::kOk;
}

// Drops the least recently used mappings that no copy holds while more than kMaxMappings of them
// are open. Called with mutex_ held.
void IpcCache::evict_unused() {
  size_t unused = 0;
  for (const auto& [key, entry] : entries_) unused += entry.mapping.use_count() == 1;
  for (auto k = recent_.end(); unused > kMaxMappings && k != recent_.begin();) {
    --k;
    auto e = entries_.find(*k);
    if (e->second.mapping.use_count() != 1) continue;
    k = recent_.erase(k);
    entries_.erase(e);
    --unused;
  }
}

}  // namespace mpizip::transport
