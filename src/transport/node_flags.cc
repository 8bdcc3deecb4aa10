#include "src/transport/node_flags.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "src/platform/log.h"
#include "src/transport/emulated.h"

namespace mpizip::transport {
namespace {

static_assert(std::atomic<uint32_t>::is_always_lock_free, "claim flags need lock-free atomics");
static_assert(std::atomic<int64_t>::is_always_lock_free, "claim flags need lock-free atomics");

// The slots, then the time of the last claim or pull (NodeFlags::touch).
constexpr size_t kSegmentBytes = sizeof(ClaimSlot) * NodeFlags::kSlots + 64;

std::mutex g_mutex;
std::weak_ptr<NodeFlags> g_own;
std::map<uint64_t, std::weak_ptr<NodeFlags>> g_peers;
std::mutex g_take_mutex;  // the owner's free-slot search

}  // namespace

std::string NodeFlags::name_of(uint64_t process) {
  char name[64];
  std::snprintf(name, sizeof name, "/mpizip-%016" PRIx64, process);
  return name;
}

std::shared_ptr<NodeFlags> NodeFlags::own() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto f = g_own.lock()) return f;
  std::shared_ptr<NodeFlags> f(new NodeFlags);
  f->name_ = name_of(process_id());
  f->bytes_ = kSegmentBytes;
  f->owner_ = true;
  const int fd = shm_open(f->name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(f->bytes_)) != 0) {
    if (fd >= 0) {
      close(fd);
      shm_unlink(f->name_.c_str());
    }
    MPIZIP_LOG_ONCE(kInfo, "no node-shared memory for CUDA IPC claim flags (%s); IPC sends wait "
                           "for their receivers", f->name_.c_str());
    return nullptr;
  }
  void* p = mmap(nullptr, f->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(f->name_.c_str());
    return nullptr;
  }
  f->slots_ = static_cast<ClaimSlot*>(p);  // zero-filled by ftruncate: every slot kFree
  f->touched_ = reinterpret_cast<std::atomic<int64_t>*>(f->slots_ + kSlots);
  g_own = f;
  return f;
}

std::shared_ptr<NodeFlags> NodeFlags::peer(uint64_t process) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto f = g_peers[process].lock()) return f;
  std::shared_ptr<NodeFlags> f(new NodeFlags);
  f->name_ = name_of(process);
  f->bytes_ = kSegmentBytes;
  const int fd = shm_open(f->name_.c_str(), O_RDWR, 0600);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, f->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  f->slots_ = static_cast<ClaimSlot*>(p);
  f->touched_ = reinterpret_cast<std::atomic<int64_t>*>(f->slots_ + kSlots);
  g_peers[process] = f;
  return f;
}

NodeFlags::~NodeFlags() {
  if (slots_ != nullptr) munmap(slots_, bytes_);
  if (owner_) shm_unlink(name_.c_str());
}

Status NodeFlags::take(uint32_t* index) {
  std::lock_guard<std::mutex> lock(g_take_mutex);
  for (uint32_t k = 0; k < kSlots; ++k) {
    const uint32_t i = (next_ + k) % kSlots;
    if (claim(i, Claim::kFree, Claim::kWaiting)) {
      next_ = i + 1;
      *index = i;
      return Status::kOk;
    }
  }
  return Status::kOutOfMemory;
}

void NodeFlags::give_back(uint32_t index) { set(index, Claim::kFree); }

void NodeFlags::touch() { touched_->store(monotonic_ns(), std::memory_order_release); }

int64_t NodeFlags::touched_ns() const { return touched_->load(std::memory_order_acquire); }

bool NodeFlags::claim(uint32_t index, Claim from, Claim to) {
  uint32_t expected = static_cast<uint32_t>(from);
  return slot(index).state.compare_exchange_strong(expected, static_cast<uint32_t>(to),
                                                   std::memory_order_acq_rel);
}

Claim NodeFlags::state(uint32_t index) {
  return static_cast<Claim>(slot(index).state.load(std::memory_order_acquire));
}

void NodeFlags::set(uint32_t index, Claim to) {
  slot(index).state.store(static_cast<uint32_t>(to), std::memory_order_release);
}

}  // namespace mpizip::transport
