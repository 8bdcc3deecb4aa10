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
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::kernels::tma {

inline constexpr int kMaxRanks = 8;
inline constexpr int kMaxSegments = 8;
inline constexpr int kMaxCtas = 64;
// A signal area: one 64-bit slot per (writing rank, CTA index).
inline constexpr uint64_t kSignalBytes = uint64_t{kMaxRanks} * kMaxCtas * sizeof(uint64_t);

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
  format::DType dtype = format::DType::kFp32;  // of a reduction (ignored by copies)
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
};

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
