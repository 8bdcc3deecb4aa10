// The count stage of a SHARED_TABLE compression (docs/FORMAT.md, "Plane tables"): one pass over
// every item's input that counts its symbols, per plane, into the workspace's counts region
// (encode::kCountWords words per item and plane: the sampled counts, the presence bitmap), then,
// in the item's last CTA to finish, each plane's table from them, once: its image for the encoder
// (frequencies, cumulative frequencies and divisors, encode::kImageAt) and its copy in the stream
// (after the block table). The encoder's launch follows it on the same stream.
//
// The counts are a sample (symbol k of each chunk for k a multiple of encode::kSample: a quarter of
// the symbols, fp64's half) and the presence is exact: every symbol of the plane is present in its
// table, so every block's words stay under the proven bound (encode::words_top).
#pragma once

#include <cstdint>

#include "kernels/ans_encode.cuh"
#include "kernels/ans_table.cuh"
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
// The launch takes a CTA for every kThreads x kChunksPerThread chunks, up to as many as fit the GPU
// at once. (A quarter of those, each striding over four times the chunks, measured slower: bf16
// 16 MiB compressed in 56.8 us against 50.9, kernels/NOTES-codec-gpu.md, v15.)

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
  int log2_block;
  int prob_bits;
  uint32_t* counts;  // encode::Params::counts
};

// Plane q's table of an item, by one warp of the item's last CTA, from its complete counts: each
// symbol's frequency and cumulative frequency to fc (f | c << 16; the CTA then writes the image the
// encoder's blocks take it from), and the stream's copy, where the stream has room for it (where it
// has not, the encoder reports the truncation).
template <DType T, bool kAligned>
__device__ void build_plane_table(const Params& p, int item, int q, uint32_t* fc) {
  const int lane = lanes::lane();
  // The other CTAs' sums are at L2 (atomics): read past this multiprocessor's cache.
  uint32_t* w = p.counts + encode::count_words_at(item, q);
  const volatile uint32_t* vw = w;
  const uint32_t bm = lane < 8 ? vw[encode::kBitmapAt + lane] : 0;
  uint32_t cnt[ans::kSymsPerLane];
  bool present[ans::kSymsPerLane];
#pragma unroll
  for (int j = 0; j < ans::kSymsPerLane; ++j) {
    cnt[j] = vw[lane + 32 * j];
    present[j] = (lanes::shfl(bm, j) >> lane) & 1;
  }
  ans::Table t;
  ans::normalize(cnt, present, p.prob_bits, t);
  t.cumulate();
#pragma unroll
  for (int j = 0; j < ans::kSymsPerLane; ++j) fc[lane + 32 * j] = t.f[j] | (t.c[j] << 16);
  const encode::Item& it = p.item[item];
  const encode::PlaneTables pt = encode::plane_tables<T>(p.counts, item);
  const uint64_t at = format::coded_offset(T, it.count) + format::block_data_offset(T, it.count, p.log2_block) + pt.tbl_at[q];
  if (at + format::shared_table_bytes(static_cast<uint32_t>(t.nsym)) <= it.cap) encode::write_table<kAligned>(it.dst + at, t);
}

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
    if (lanes::lane() == 0 && bits) atomicOr(out + q * encode::kCountWords + encode::kBitmapAt + warp, bits);
  }
  // The item's last CTA to finish (its counts complete) builds the plane tables, a warp a plane,
  // and sets the item's counter back to zero for the next launch.
  // (The barrier, then thread 0's fence, order every thread's atomics before its count.)
  __shared__ bool last;
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    last = atomicAdd(out + encode::kDoneAt, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (tid == 0) out[encode::kDoneAt] = 0;
  __shared__ uint32_t fc[kPlanes][256];
  if (warp < kPlanes) build_plane_table<T, kAligned>(p, item, warp, fc[warp]);
  __syncthreads();
  // The image: a symbol a thread, its divisor (a division in double) beside its frequencies.
#pragma unroll
  for (int q = 0; q < kPlanes; ++q) {
    const uint32_t e = fc[q][tid], f = e & 0xFFFFu;
    reinterpret_cast<uint2*>(out + q * encode::kCountWords + encode::kImageAt)[tid] =
        make_uint2(e, f ? encode::divisor(f).mp : 0);
  }
}

}  // namespace mpizip::kernels::count
