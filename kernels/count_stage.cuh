// The count stage of a SHARED_TABLE compression (docs/FORMAT.md, "Plane tables"): one pass over
// every item's input that counts its symbols, per plane, into the workspace (encode::kCountWords
// words per item and plane: the sampled counts, then the presence bitmap), so that the encoder
// builds one table per plane from them before it codes any block. It reads the input and writes
// nothing else; the encoder's launch follows it on the same stream.
//
// The counts are a sample (symbol k of each chunk for k a multiple of encode::kSample: a quarter of
// the symbols, fp64's half) and the presence is exact: every symbol of the plane is present in its
// table, so every block's words stay under the proven bound (encode::words_top).
#pragma once

#include <cstdint>

#include "kernels/ans_encode.cuh"
#include "kernels/bytes.cuh"
#include "kernels/format.h"
#include "kernels/lanes.cuh"
#include "kernels/split.cuh"

namespace mpizip::kernels::count {

using format::DType;

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / lanes::kLanes;
// Chunks a thread loads at once (all in flight before the first is counted).
inline constexpr int kChunksPerThread = 4;

// The encoder's launch follows this one as a programmatic dependent launch where the hardware has
// it (sm_90): it may start once every CTA of this grid has started (let_dependents_start), runs its
// split phase, which needs no counts, and waits for this grid's completion and writes before it
// reads them (encode::count_stage_done). Elsewhere both are no-ops: plain stream order.
__device__ __forceinline__ void let_dependents_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIP_PLATFORM_AMD__)
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

struct Params {
  encode::Item item[scan::kMaxItems];
  uint64_t stored;  // bit i: item i is written STORED (nothing to count)
  int n;
  uint32_t* counts;  // encode::Params::counts
};

// Grid: blockIdx.y is the item, blockIdx.x strides over its 16-byte chunks. Each warp counts into
// its own histogram in shared memory (symbols of float data crowd into a few values, and one
// histogram for the CTA would serialise its warps' atomics on them); the CTA then adds its sums
// to the item's counts with one global atomic per symbol it saw.
template <DType T, bool kAligned>
__device__ void run(const Params& p) {
  using C = split::Chunk<T>;
  constexpr int kPlanes = format::planes(T);
  __shared__ uint32_t hist[kPlanes][kWarps][256];
  __shared__ uint8_t seen[kPlanes][256];
  const int item = static_cast<int>(blockIdx.y);
  if (item >= p.n || ((p.stored >> item) & 1)) return;
  let_dependents_start();
  const encode::Item& it = p.item[item];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / lanes::kLanes;
  for (int i = tid; i < kPlanes * kWarps * 256; i += kThreads) (&hist[0][0][0])[i] = 0;
  for (int i = tid; i < kPlanes * 256; i += kThreads) (&seen[0][0])[i] = 0;
  __syncthreads();
  const uint64_t nbytes = it.count * format::elem_bytes(T);
  const uint64_t nsym = format::symbols_per_plane(T, it.count);
  const uint64_t nch = (nbytes + 15) / 16;
  constexpr uint64_t kStride = uint64_t{kThreads} * kChunksPerThread;
  for (uint64_t c0 = uint64_t{blockIdx.x} * kStride + tid; c0 < nch; c0 += uint64_t{gridDim.x} * kStride) {
    uint32_t in[kChunksPerThread][4];
#pragma unroll
    for (int u = 0; u < kChunksPerThread; ++u) {
      const uint64_t c = c0 + uint64_t{kThreads} * u;
      if (16 * c + 16 <= nbytes) bytes::ld128<kAligned>(it.src + 16 * c, in[u]);
      else if (c < nch) split::load_input<kAligned>(it.src, nbytes, c, in[u]);
    }
#pragma unroll
    for (int u = 0; u < kChunksPerThread; ++u) {
      const uint64_t c = c0 + uint64_t{kThreads} * u;
      if (c >= nch) break;
      uint32_t sym[2][4], raw[2][2];
      C::split(in[u], sym, raw);
      const bool whole = (c + 1) * C::kSyms <= nsym;
#pragma unroll
      for (int q = 0; q < kPlanes; ++q) {
#pragma unroll
        for (int k = 0; k < C::kSyms; ++k) {
          if (!whole && c * C::kSyms + k >= nsym) continue;
          const uint32_t v = __byte_perm(sym[q][k / 4], 0, 0x4440 | (k % 4));
          seen[q][v] = 1;
          if (k % encode::kSample == 0) atomicAdd(&hist[q][warp][v], 1u);
        }
      }
    }
  }
  __syncthreads();
  uint32_t* out = p.counts + encode::count_words_at(item, 0);
  static_assert(kThreads == 256, "a thread per symbol value");
#pragma unroll
  for (int q = 0; q < kPlanes; ++q) {
    uint32_t sum = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += hist[q][w][tid];
    if (sum) atomicAdd(out + q * encode::kCountWords + tid, sum);
    // Symbol tid's presence bit: word tid / 32 of the bitmap, one atomic a warp.
    const uint32_t bits = lanes::ballot(seen[q][tid] != 0);
    if (lanes::lane() == 0 && bits) atomicOr(out + q * encode::kCountWords + 256 + warp, bits);
  }
}

}  // namespace mpizip::kernels::count
