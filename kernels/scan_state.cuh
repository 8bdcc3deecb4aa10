// The codec's per-launch state in the caller's workspace: block tickets, the decoupled look-back
// that places variable-size blocks one after another within a single launch, per-buffer error and
// checksum accumulators, and completion (the last 32-lane group to finish publishes the results
// and leaves the state ready for the next launch, so no launch needs a memset before it).
//
// Look-back entries carry the launch's epoch, so entries left by earlier launches read as "not yet
// published" without being cleared. Block tickets are handed out in launch order, so a group only
// ever waits for blocks that running groups hold: no deadlock whatever the residency.
#pragma once

#include <cstdint>

#include "kernels/lanes.cuh"

namespace mpizip::kernels::scan {

inline constexpr int kMaxItems = 64;

struct State {
  uint32_t epoch;   // the last launch's epoch (0 after workspace_init)
  uint32_t ticket;  // next block ticket of the running launch
  uint32_t done;    // groups of the running launch that finished
  uint32_t pad;
  int32_t err[kMaxItems];        // first error per buffer of the running launch
  uint64_t checksum[kMaxItems];  // checksum sums per buffer of the running launch
};
inline constexpr uint64_t kStateBytes = 1024;
static_assert(sizeof(State) <= kStateBytes, "state fits its reserved bytes");

// Look-back entry: epoch (22 bits) | flag (2 bits) | value in units of 16 bytes (40 bits).
inline constexpr uint64_t kFlagAggregate = 1, kFlagInclusive = 2;
inline constexpr uint32_t kEpochMask = (1u << 22) - 1;

__device__ __forceinline__ uint32_t launch_epoch(const State* s) {
  const uint32_t e = *reinterpret_cast<const volatile uint32_t*>(&s->epoch);
  return e % kEpochMask + 1;  // 1..2^22-1, never 0 (a zeroed workspace)
}

// The group's next block ticket. On a 64-wide wavefront both groups draw together (consecutive
// tickets), so neither half ever waits for the other inside one wavefront.
__device__ __forceinline__ uint32_t take_ticket(State* s) {
  uint32_t t = 0;
  if ((threadIdx.x & (MPIZIP_WARP_SIZE - 1)) == 0) t = atomicAdd(&s->ticket, lanes::kGroupsPerWarp);
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  t = __shfl(t, 0, MPIZIP_WARP_SIZE);
#else
  t = __shfl_sync(0xffffffffu, t, 0);
#endif
  return t + (threadIdx.x & (MPIZIP_WARP_SIZE - 1)) / lanes::kLanes;
}

__device__ __forceinline__ void publish(uint64_t* entries, uint64_t idx, uint32_t epoch, uint64_t flag,
                                        uint64_t bytes) {
  const uint64_t v = (uint64_t{epoch} << 42) | (flag << 40) | (bytes >> 4);
  __threadfence();
  *reinterpret_cast<volatile uint64_t*>(&entries[idx]) = v;
}

// Between polls of a predecessor not yet published: the waiting group gives its issue slots to the
// groups still coding (without it, polling took 13% of the streamed encoder's instructions).
__device__ __forceinline__ void pause() {
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  __builtin_amdgcn_s_sleep(4);
#else
  __nanosleep(200);
#endif
}

// Bytes of all blocks in [first, idx): every lane returns the same value. Entries before `first`
// (another buffer's) are not read.
__device__ inline uint64_t look_back(const uint64_t* entries, uint64_t first, uint64_t idx, uint32_t epoch) {
  uint64_t prefix = 0;
  int64_t look = static_cast<int64_t>(idx) - 1;
  while (look >= static_cast<int64_t>(first)) {
    const int64_t j = look - lanes::lane();
    uint64_t v = 0;
    bool inclusive = true, ready = true;
    if (j >= static_cast<int64_t>(first)) {
      v = *reinterpret_cast<const volatile uint64_t*>(&entries[j]);
      const uint64_t flag = (v >> 40) & 3;
      ready = (v >> 42) == epoch && flag != 0;
      inclusive = flag == kFlagInclusive;
    }
    const uint32_t inc = lanes::ballot(ready && inclusive);
    const int stop = inc ? __ffs(inc) - 1 : lanes::kLanes - 1;
    const uint32_t needed = stop == 31 ? 0xffffffffu : (2u << stop) - 1;
    if (~lanes::ballot(ready) & needed) {  // a predecessor has not published yet
      pause();
      continue;
    }
    const uint64_t mine = lanes::lane() <= stop ? (v & ((uint64_t{1} << 40) - 1)) << 4 : 0;
    prefix += lanes::sum(mine);
    if (inc) break;
    look -= lanes::kLanes;
  }
  return prefix;
}

// First error of a buffer wins.
__device__ __forceinline__ void record_error(State* s, int item, int32_t code) {
  atomicCAS(&s->err[item], 0, code);
}

// Called once by every group at its end (all lanes). True in exactly one group, the last: every
// other group's writes are then visible to it.
__device__ __forceinline__ bool finish(State* s) {
  uint32_t d = 0;
  const uint32_t groups = gridDim.x * (blockDim.x / lanes::kLanes);
  lanes::sync();
  if (lanes::lane() == 0) {
    __threadfence();
    d = atomicAdd(&s->done, 1u);
  }
  d = lanes::shfl(d, 0);
  if (d != groups - 1) return false;
  __threadfence();
  return true;
}

// Leaves the state for the next launch (by the last group, after it has read err and checksum).
__device__ __forceinline__ void reset(State* s, int items, uint32_t epoch) {
  for (int i = lanes::lane(); i < items; i += lanes::kLanes) {
    s->err[i] = 0;
    s->checksum[i] = 0;
  }
  if (lanes::lane() == 0) {
    s->ticket = 0;
    s->done = 0;
    s->epoch = epoch;
  }
  __threadfence();
}

}  // namespace mpizip::kernels::scan
