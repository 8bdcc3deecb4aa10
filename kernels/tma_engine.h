// The TMA engine of the intra-node collectives (coll/tma_coll.h): one kernel launch executes one
// rank's part of a collective, a list of *segments* that the planner (coll/tma_plan.h) produced.
// CUDA-free header; the kernels are in kernels/tma_engine.cuh, their launcher in tma_engine.cu (a
// stub answering kNoDevice in builds without CUDA: tma_engine_none.cc).
//
// A segment is one task over a contiguous byte range: dst[k][i] = src[0][i] (op) src[1][i] (op) ...
// (op) src[nsrc - 1][i] for every destination k, folded in source order (kernels/reduce.h gives the
// arithmetic, bit for bit that of the CPU and GPU reduce); with nsrc == 1 it is a copy of bytes to
// every destination (fan-out: loaded once, stored ndst times). Pointers are device addresses in this
// process (a peer's buffer through its CUDA IPC mapping).
//
// Execution. Every segment is cut into chunks of `chunk_bytes`, numbered across the segments in
// order; chunk g runs on CTA g % ctas, so one chunk's whole fold stays on one CTA, in source order.
// On the TMA path one thread per CTA issues bulk copies (cp.async.bulk) of the sources' chunks into
// a shared-memory ring of `stages` stages (half of them loads in flight, the other half stores in
// flight), the CTA's threads fold the loaded chunk in shared memory, and the issuing thread stores
// the result to every destination with bulk copies. The fold is done by the threads rather than by
// bulk reductions (cp.reduce.async.bulk) because the hardware reduction does not give the fixed-order
// reference's bits on every input (docs/DESIGN.md, "TMA collectives"). Bytes past the last multiple
// of 16 of a segment are moved by threads; a segment whose addresses are not all 16-byte aligned,
// and every segment on the SM path, runs on the threads with ordinary loads and stores.
//
// Synchronisation happens only at the end of the collective: with `signals` set, each CTA, once its
// stores are complete, writes `seq` into its slot of every rank's signal area with a system-scope
// release, then waits (system-scope acquire) until every rank's CTA of the same index has written
// `seq` into its own area. The kernel thus ends only when every peer has finished writing this
// rank's output and reading its input. Every rank must launch the same number of CTAs.
//
// The wait is bounded. A rank that cannot run its part (its launch failed, or it gave up) writes
// `seq` into its fault word of every rank's signal area; a CTA waiting in the barrier stops as soon
// as it sees a peer's fault word at `seq`, or once `timeout_ns` have passed since it began to wait,
// and then writes its own fault word everywhere (so that the other peers stop too) and
// seq * 4 + BarrierOutcome into `result`, host memory its rank reads after the kernel: the
// collective fails there with an MPI error instead of the GPU waiting forever.
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::kernels::tma {

inline constexpr int kMaxRanks = 8;
inline constexpr int kMaxSegments = 8;
inline constexpr int kMaxCtas = 64;
// A signal area: one 64-bit slot per (writing rank, CTA index), then one fault word per rank (the
// last seq whose part that rank could not run).
inline constexpr uint64_t kSignalSlots = uint64_t{kMaxRanks} * kMaxCtas;
inline constexpr uint64_t kFaultSlot = kSignalSlots;  // index of rank 0's fault word
inline constexpr uint64_t kSignalBytes = (kSignalSlots + kMaxRanks) * sizeof(uint64_t);

// How a barrier ended, as written into Launch::result (seq * 4 + outcome); a passed barrier writes
// nothing.
enum BarrierOutcome : uint64_t { kBarrierPassed = 0, kBarrierPeerFailed = 1, kBarrierTimedOut = 2 };

struct Segment {
  const void* src[kMaxRanks] = {};
  void* dst[kMaxRanks] = {};
  uint32_t nsrc = 0;  // 1 (a copy) or the number of contributions, the same in every segment
  uint32_t ndst = 0;  // 1..kMaxRanks
  uint64_t bytes = 0;  // a multiple of the element size
};

enum class Path : uint8_t {
  kTma,  // bulk copies issued by one thread per CTA (sm_90 and newer)
  kSm,   // the CTA's threads load and store (any GPU; the comparison path of the benchmarks)
};

struct Launch {
  Segment seg[kMaxSegments];
  int nseg = 0;
  reduce::Type type = reduce::Type::kFp32;  // of a reduction (ignored by copies)
  reduce::Op op = reduce::Op::kSum;
  int ctas = 1;                   // 1..kMaxCtas
  uint32_t chunk_bytes = 32768;   // a multiple of 16, at most 64 KiB
  int stages = 6;                 // ring stages, at least 2 x nsrc; stages x chunk_bytes <= 200 KiB
  Path path = Path::kTma;
  // The end-of-collective barrier; signals == nullptr skips it (the caller synchronises).
  uint64_t* signals = nullptr;               // this rank's signal area (kSignalBytes, device)
  uint64_t* peer_signals[kMaxRanks] = {};    // every rank's area as mapped here (own included)
  int rank = 0;
  int nranks = 1;
  uint64_t seq = 0;  // > every earlier seq of this group
  uint64_t timeout_ns = 10'000'000'000;  // longest wait in the barrier, from its start
  uint64_t* result = nullptr;  // host memory the device writes (pinned); nullptr: not reported
};

// The outcome of the barrier of the launch `seq` whose result word is `result`, once the kernel has
// ended (after sync).
inline BarrierOutcome barrier_outcome(const uint64_t* result, uint64_t seq) {
  if (result == nullptr) return kBarrierPassed;
  const uint64_t v = *static_cast<const volatile uint64_t*>(result);
  return v / 4 == seq ? static_cast<BarrierOutcome>(v % 4) : kBarrierPassed;
}

// True when the current device runs the TMA path (compute capability 9.0 or newer).
bool tma_capable();

// Enqueues the collective part `l` on `stream` (a cudaStream_t as void*; nullptr: the engine's own
// stream). Asynchronous. kInvalidArgument for bad parameters, kNoDevice without a GPU, kDeviceError
// when the launch fails.
Status run(const Launch& l, void* stream);

// The engine's own stream of the current device (created on first use; it synchronises with the
// legacy default stream, so work the application left there is ordered before the collectives).
Status engine_stream(void** out);
// Waits for everything enqueued on `stream` (nullptr: the engine's stream).
Status sync(void* stream);
// Asynchronous device-to-device copy on `stream`, and a fill with zero bytes.
Status copy_async(void* dst, const void* src, uint64_t bytes, void* stream);
Status zero_async(void* dst, uint64_t bytes, void* stream);

}  // namespace mpizip::kernels::tma
