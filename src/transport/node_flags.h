// Claim flags in node-shared memory: how the two sides of a CUDA IPC transfer agree, without MPI
// and without either side waiting for the other's next MPIZip call, on who moves the bytes out of
// the sender's buffer (pmpi.h, "IPC").
//
// Each process owns one POSIX shared-memory segment of kSlots slots, created on first use and
// removed when the process's last transport goes. A sender takes a slot for each IPC transfer and
// names it in the transfer's header; the receiver opens the sender's segment (by the process id
// the header's IPC description carries) and the two race for the slot with compare-and-swap:
//   kWaiting  -> kPulling  (receiver: it copies out of the sender's buffer now)
//   kPulling  -> kPulled   (receiver: the copy has finished; the sender's buffer is free)
//   kWaiting  -> kMoving   (sender: it waited long enough and copies its buffer into host memory of
//                           its own)
//   kMoving   -> kMoved    (sender: the copy has finished and its segments are posted to MPI; the
//                           receiver takes them as the inline bytes of the transfer)
// so exactly one of them copies the application's buffer, a receiver that is there pulls straight
// from it (one copy for large messages), and a sender whose receiver is elsewhere (in an MPI call
// MPIZip does not intercept) completes anyway: MPI moves the segments from inside any call. The
// slot is free again once the side that looks last has seen the other's final state: the sender,
// once the receiver pulled; the receiver, once it has seen kMoved (MPI may complete a moved send
// before the receiver reads the header that names the slot, so the sender cannot free it then).
// A moved copy abandoned with its transport keeps its slot (kMoved) for good. Lock-free
// 32- and 64-bit atomics work across processes that map the same memory.
//
// The segment also holds when a receiver last claimed or finished pulling one of its slots
// (touch()): a sender waits for its receiver so long after that, not after its own post, so that a
// receiver busy pulling a window of earlier messages is not taken for one that sits elsewhere.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "src/platform/status.h"
#include "src/transport/ipc.h"

namespace mpizip::transport {

enum class Claim : uint32_t {
  kFree = 0,
  kWaiting = 1,
  kPulling = 2,
  kPulled = 3,
  kMoving = 4,
  kMoved = 5,
};

struct ClaimSlot {
  std::atomic<uint32_t> state;   // a Claim
  uint32_t reserved;
};

class NodeFlags {
 public:
  static constexpr uint32_t kSlots = 4096;

  // This process's segment (created on first use); null with a log line when shared memory is
  // not available (IPC transfers then wait for the receiver's answer, as before).
  static std::shared_ptr<NodeFlags> own();
  // The segment of process `process` (an IpcDescriptor's process id), opened on first use; null
  // when it cannot be opened.
  static std::shared_ptr<NodeFlags> peer(uint64_t process);

  ~NodeFlags();

  // A free slot of this process's segment, set to kWaiting; kOutOfMemory when every slot is taken.
  Status take(uint32_t* index);
  // Returns a slot taken with take().
  void give_back(uint32_t index);
  ClaimSlot& slot(uint32_t index) { return slots_[index % kSlots]; }

  // Compare-and-swap of a slot's state; true when it was `from` and is now `to`.
  bool claim(uint32_t index, Claim from, Claim to);
  Claim state(uint32_t index);
  void set(uint32_t index, Claim to);
  // Receivers: a slot of this segment was just claimed or pulled. Senders: when that last happened
  // (CLOCK_MONOTONIC ns; 0 never).
  void touch();
  int64_t touched_ns() const;

 private:
  NodeFlags() = default;
  static std::string name_of(uint64_t process);

  ClaimSlot* slots_ = nullptr;
  std::atomic<int64_t>* touched_ = nullptr;  // after the slots
  size_t bytes_ = 0;
  bool owner_ = false;
  std::string name_;
  uint32_t next_ = 0;  // owner: where the search for a free slot starts
};

}  // namespace mpizip::transport
