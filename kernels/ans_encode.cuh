// The GPU encoder: one 32-lane group codes one block of one symbol plane, start to finish, inside a
// single launch. Phases per block: split (symbols to shared memory, raw bits to the stream,
// presence and sampled counts), table (frequencies normalised in the group), rANS encode (groups
// of 32 symbols walked backward, renormalisation words compacted with a ballot), look-back (the
// block's place in the stream), write-out. The fused kernel also writes the header and raw section;
// the encode-only kernel leaves them to the split kernel (kernels/split_stage.cuh). A SHARED_TABLE
// launch follows a count stage (kernels/count_stage.cuh), which counts the symbols and builds each
// plane's table once; each block takes it, or its own where that is cheaper.
//
// Two ways to hold a block. The shared-memory instantiations (wide, middle, narrow) keep the whole
// block's symbols in shared memory and let the words grow down into the space the coded symbols
// free: ~19.5 KiB a group at 16384-symbol blocks, so at most 11 groups a multiprocessor. The
// streamed instantiation keeps no symbols: the split phase only counts them (and writes the raw
// bits), and the encode phase reads the block's input again, backward, a window of a few groups at a
// time (encode_streamed), while its words gather in a ring in shared memory and go on to a slot of
// global scratch in the workspace; its shared memory is one window, the ring and the table (4.6-6.9
// KiB), so as many groups reside as registers allow. Both write the same stream, byte for byte.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/ans_table.cuh"
#include "kernels/bytes.cuh"
#include "kernels/codec_gpu.h"
#include "kernels/format.h"
#include "kernels/lanes.cuh"
#include "kernels/scan_state.cuh"
#include "kernels/split.cuh"

namespace mpizip::kernels::encode {

using format::DType;

// Counts come from every kSample-th symbol of a block (presence from all of them): the frequency
// estimate of 1/4 of 16384 symbols costs under 0.05% of ratio and saves most shared atomics.
inline constexpr int kSample = 4;
// Inputs of at most this many bytes are sent STORED: a coded block carries ~200 bytes of states
// and table, more than coding saves on them.
inline constexpr uint64_t kStoredMaxBytes = 1024;
// Chunks of 16 bytes each lane loads ahead in the split phase.
#ifndef MPIZIP_ENC_BATCH
#define MPIZIP_ENC_BATCH 8
#endif
inline constexpr int kBatch = MPIZIP_ENC_BATCH;
// The same for the split of a whole block (split_full): its chunks' work has no branches, so the
// compiler interleaves a batch's chunks, and 8 a batch took 222 registers (8 groups a
// multiprocessor); 4 take 190, and 184 under the kernel's register cap (codec_gpu.cu) without spills.
#ifndef MPIZIP_ENC_FULL_BATCH
#define MPIZIP_ENC_FULL_BATCH 4
#endif
inline constexpr int kFullBatch = MPIZIP_ENC_FULL_BATCH;
// The encoder's instantiations (codec_gpu.cu says which runs where): the wide one (184 registers),
// the middle one (168: 3 warps a sub-partition) and the narrow one (128: 4). The tighter ones keep
// fewer chunks a lane in flight so as not to spill: the middle one whole-block batches of
// MPIZIP_ENC_MID_FULL_BATCH (e5m2, 16 symbols a chunk: 2), the narrow one whole-block batches of
// MPIZIP_ENC_NARROW_FULL_BATCH and general batches of MPIZIP_ENC_NARROW_BATCH (ptxas: no spills).
// The streamed one (kStream) loads one chunk a lane at a time in its split phase's general path, and
// whole-block batches of MPIZIP_ENC_STREAM_FULL_BATCH (no spills under its register cap).
#ifndef MPIZIP_ENC_STREAM_FULL_BATCH
#define MPIZIP_ENC_STREAM_FULL_BATCH 4
#endif
enum Variant : int { kWide = 0, kMid = 1, kNarrow = 2, kStream = 3 };
#ifndef MPIZIP_ENC_MID_FULL_BATCH
#define MPIZIP_ENC_MID_FULL_BATCH 4
#endif
#ifndef MPIZIP_ENC_NARROW_FULL_BATCH
#define MPIZIP_ENC_NARROW_FULL_BATCH 2
#endif
#ifndef MPIZIP_ENC_NARROW_BATCH
#define MPIZIP_ENC_NARROW_BATCH 4
#endif
// Table entries of 16 bytes ({m', x_max, M - f, c << 5 | k}: one load, nothing to derive) or of 8
// ({m', k | c << 5 | f << 16}: x_max and M - f derived in the step, 4 instructions more, 2 KiB a
// table, presence flags inside it). The shared-memory instantiations take 8 (11 groups a
// multiprocessor at 16384-symbol blocks instead of 10, bf16 1 GiB 2355 -> 2152 us, v6, measured).
// The streamed one, whose shared memory is not what limits it, takes 16 for bf16, fp32, fp64 and
// e5m2 (bf16 1 GiB 0.97x the time with 8, e5m2 0.95x). fp16 and e4m3 keep 8: their symbols spread
// over more of the table, and 32 lanes' 16-byte loads from it conflict more (1.11x and 1.18x the
// time with 8 at 1 GiB; kernels/NOTES-codec-gpu.md, v13 round 5).
#ifndef MPIZIP_ENC_ENTRY8
#define MPIZIP_ENC_ENTRY8 1
#endif
inline constexpr bool kEntry8 = MPIZIP_ENC_ENTRY8;
#ifndef MPIZIP_ENC_STREAM_ENTRY16
#define MPIZIP_ENC_STREAM_ENTRY16 1
#endif
// A table area: the entries (the sampled counts alias them until the table is built), the flags.
template <bool kEntry16>
struct TableLayout {
  using Entry = std::conditional_t<kEntry16, uint4, uint2>;
  static constexpr uint32_t kFlagsAt = kEntry16 ? 256 * 16 : 1024;
  static constexpr uint32_t kAreaBytes = kEntry16 ? 256 * 16 + 256 : 256 * 8;
};
using SharedTable = TableLayout<!kEntry8>;   // the shared-memory instantiations'
template <DType T>
inline constexpr bool kStreamEntry16 = MPIZIP_ENC_STREAM_ENTRY16 && T != DType::kFp16 && T != DType::kE4m3;
template <DType T>
using StreamTable = TableLayout<kStreamEntry16<T>>;  // the streamed one's
inline constexpr uint32_t kTableAreaBytes = SharedTable::kAreaBytes;

struct Item {
  const uint8_t* src;
  uint64_t count;  // elements
  uint8_t* dst;
  uint64_t cap;    // bytes
};

// A SHARED_TABLE launch's counts region in the workspace (kernels/count_stage.cuh writes it, the
// encoder reads it): kCountWords words per item and plane,
// - [0, 256) the sampled counts of the 256 symbols (every kSample-th symbol of the plane) and
//   [kBitmapAt, +8) the plane's presence bitmap (all of them): zero before the count stage, which
//   adds into them (workspace_init zeroes them, and the encoder's last group zeroes what its launch
//   used: the first kZeroWords);
// - [kImageAt, +512) the plane's table, built once by the item's last count-stage CTA: for symbol
//   s, word 2s = f | c << 16 (frequency and cumulative frequency), word 2s + 1 the divisor's m'
//   (encode::divisor);
// - plane 0's word kDoneAt: the item's count-stage CTAs that have finished (the last resets it).
inline constexpr uint32_t kBitmapAt = 256;
inline constexpr uint32_t kImageAt = kBitmapAt + 8;
inline constexpr uint32_t kDoneAt = kImageAt + 512;
inline constexpr uint32_t kZeroWords = kImageAt;
inline constexpr uint32_t kCountWords = kDoneAt + 8;
inline constexpr uint64_t kCountsBytes = uint64_t{scan::kMaxItems} * 2 * kCountWords * 4;
static_assert(kCountWords * 4 % 16 == 0, "each item's and plane's words 16-byte aligned");
__host__ __device__ constexpr uint64_t count_words_at(int item, int plane) {
  return (uint64_t{2} * static_cast<uint64_t>(item) + static_cast<uint64_t>(plane)) * kCountWords;
}

// The encoder's division by a frequency f: floor(x / f) = (x + umulhi(x, m')) >> k with
// m' = ceil(2^(32+k) / f) - 2^32, k = ceil(log2 f): exact for every x < f << (32 - PB) (the
// encoder's state after renormalisation).
struct Divisor {
  uint32_t mp, k;
};
__device__ __forceinline__ uint32_t divisor_shift(uint32_t f) { return f <= 1 ? 0 : 32 - __clz(f - 1); }
__device__ __forceinline__ Divisor divisor(uint32_t f) {
  const uint32_t k = divisor_shift(f);
  // In double: the quotient's rounding error (< 2^-19) is below its distance to the next integer
  // (>= 1/f) unless it is one, so the ceiling is exact.
  const double q = ceil(static_cast<double>(uint64_t{1} << (32 + k)) / f);
  return {static_cast<uint32_t>(static_cast<uint64_t>(q) - (uint64_t{1} << 32)), k};
}

struct Params {
  Item item[scan::kMaxItems];
  uint32_t first[scan::kMaxItems + 1];  // item i owns tickets [first[i], first[i + 1])
  uint64_t stored;                      // bit i: item i is written STORED
  int n;
  int log2_block;
  int prob_bits;
  bool checksum;
  uint32_t* counts;   // SHARED_TABLE: the count stage's region (kCountWords per item and plane); null:
                      // every block gets its own table
  scan::State* state;
  uint64_t* entries;  // look-back entries, one per ticket
  gpu::DeviceResult* results;
  // The streamed instantiation's words: one slot of slot_bytes (>= words_top) for each of its groups.
  uint8_t* scratch;
  uint32_t slot_bytes;
};

// Shared memory of one group: symbols of the block [0, B), renormalisation words growing down from
// words_top(B, PB) into the space the consumed symbols free, the encode table, presence flags.
// The proven bound: a symbol of frequency f >= 1 grows a lane's state by at most
// log2(M / f) + 1.45 * 2^(PB-16) <= PB + 0.05 bits (PB <= 11), and each word takes 16 bits out,
// so the words of groups g..G-1 take at most 4 (PB + 0.05) (G - g) bytes; they must stay above the
// symbols of groups 0..g-1, [0, 32 g): 32 g + 4 (PB + 0.05) (G - g) is largest at g = 0 (PB >= 8),
// 4 (PB + 0.05) G = B (PB + 0.05) / 8 (PB 10: 1.27 B). That bound is kept for blocks of up to 4096
// symbols; larger blocks get B + kWordsSlack (1.09 B at 16384: 24.6 -> 21.8 KiB a group, 8 -> 10
// groups a multiprocessor; 19.5 KiB and 11 with 8-byte entries), since coded symbols of float
// exponents take 2-6 bits, not 8-10. The
// encoder checks, before every read of symbols, that the words written so far leave them intact
// (encode() returns false otherwise); such a block is split again and coded with the flat table
// (every symbol 2^(PB-8), exactly 8 bits a symbol: a lane emits one word every second symbol, so
// the words of k groups take at most 32 k + 32 bytes, and B + 320 <= words_top always suffices).
// Hence PB <= 11 on the GPU.
inline constexpr uint32_t kWordsSlack = 1536;
__host__ __device__ constexpr uint32_t words_top(int log2_block, int prob_bits) {
  const uint32_t b = 1u << log2_block;
  const uint32_t proven = (b + (b * static_cast<uint32_t>(prob_bits - 8) + b / 8) / 8 + 64 + 15) / 16 * 16;
  const uint32_t top = log2_block <= 12 || proven < b + kWordsSlack ? proven : b + kWordsSlack;
  return top < b + 320 ? b + 320 : top;
}
__host__ __device__ constexpr uint32_t group_smem_bytes(int log2_block, int prob_bits) {
  return words_top(log2_block, prob_bits) + kTableAreaBytes;
}

// The streamed instantiation's window: each lane loads kWinChunks 16-byte chunks of input, so a
// window holds 32 kWinChunks chunks, kWinGroups groups of symbols (at least 8, so that a window's
// coding hides the next window's loads). Its shared memory: one window's symbols, a ring of
// kRingBytes where the words are gathered before they go to the scratch slot in 16-byte stores (a
// window writes at most 64 x 16 bytes, and at most 15 more wait for the next), and the table area.
inline constexpr uint32_t kRingBytes = 2048;
template <DType T>
inline constexpr int kWinChunks = T == DType::kFp64 ? 4 : T == DType::kE5m2 ? 1 : 2;
template <DType T>
inline constexpr int kWinGroups = kWinChunks<T> * split::Chunk<T>::kSyms;
// A streamed group's scratch slot: the block's head, at most 32 + 2 x 256 bytes, and its words.
inline constexpr uint32_t kHeadBytes = 32 + 2 * 256;
__host__ __device__ constexpr uint32_t stream_slot_bytes(int log2_block, int prob_bits) {
  return kHeadBytes + words_top(log2_block, prob_bits);
}
template <DType T>
__host__ __device__ constexpr uint32_t stream_group_smem_bytes() {
  static_assert(kWinGroups<T> * 64 + 16 <= kRingBytes, "a window's words and a partial store fit the ring");
  return static_cast<uint32_t>(kWinGroups<T>) * 32 + kRingBytes + StreamTable<T>::kAreaBytes;
}

__device__ inline void write_header(uint8_t* dst, DType t, uint64_t count, uint8_t flags, int lb, int pb,
                                    uint64_t raw_bytes) {
  const int l = lanes::lane();
  uint32_t w = 0;
  switch (l) {
    case 0: w = 0x315A504Du; break;  // "MPZ1"
    case 1: w = format::version_for(flags) | (uint32_t{static_cast<uint8_t>(t)} << 8) | (uint32_t{flags} << 16) |
                (uint32_t(lb) << 24); break;
    case 2: w = static_cast<uint32_t>(count); break;
    case 3: w = static_cast<uint32_t>(count >> 32); break;
    case 4: w = static_cast<uint32_t>(raw_bytes); break;
    case 5: w = static_cast<uint32_t>(raw_bytes >> 32); break;
    case 6: w = uint32_t(pb) | (uint32_t(format::planes(t)) << 8); break;
    default: break;
  }
  if (l < 8) bytes::st32<false>(dst + 4 * l, w);
}

// A SHARED_TABLE launch starts while the count stage (kernels/count_stage.cuh) still runs, as its
// programmatic dependent where the hardware has one (sm_90): this waits for that grid to complete
// and its counts to be visible. A no-op in any other launch.
__device__ __forceinline__ void count_stage_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(__HIP_PLATFORM_AMD__)
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The header flags of a coded (not STORED) stream of this launch.
__host__ __device__ inline uint8_t coded_flags(bool checksum, bool shared) {
  return static_cast<uint8_t>((checksum ? format::kFlagChecksum : 0) | (shared ? format::kFlagSharedTable : 0));
}

// A SHARED_TABLE stream's plane tables, from the counts' presence bitmaps: plane q's table starts
// at offset tbl_at[q] from the block table's padded end, and the blocks start `bytes` after it.
struct PlaneTables {
  uint32_t tbl_at[2];
  uint32_t bytes;
};
template <DType T>
__device__ __forceinline__ PlaneTables plane_tables(const volatile uint32_t* counts, int item) {
  const int lane = lanes::lane();
  PlaneTables pt{{0, 0}, 0};
#pragma unroll
  for (int q = 0; q < format::planes(T); ++q) {
    const uint32_t bm = lane < 8 ? counts[count_words_at(item, q) + kBitmapAt + lane] : 0;
    pt.tbl_at[q] = pt.bytes;
    pt.bytes += static_cast<uint32_t>(format::shared_table_bytes(lanes::sum(static_cast<uint32_t>(__popc(bm)))));
  }
  return pt;
}

// A table in the stream at dst: the presence bitmap and the present symbols' frequencies (a block's
// head, write_head; held by a group, its lanes' symbols as in ans::Table).
template <bool kAligned>
__device__ __forceinline__ void write_head(uint8_t* dst, const ans::Table& t) {
  const int lane = lanes::lane();
  uint32_t bmw = 0;
#pragma unroll
  for (int j = 0; j < ans::kSymsPerLane; ++j) bmw = lane == j ? t.bm[j] : bmw;
  if (lane < 8) bytes::st32<kAligned>(dst + 4 * lane, bmw);
#pragma unroll
  for (int j = 0; j < ans::kSymsPerLane; ++j)
    if (t.f[j]) bytes::st16<kAligned>(dst + 32 + 2 * t.rank(j), t.f[j]);
  if (lane == 0 && (t.nsym & 1)) bytes::st16<kAligned>(dst + 32 + 2 * t.nsym, 0);
}
// A SHARED_TABLE stream's plane table at dst: bitmap and frequencies as a block's head, then zeros
// to 16 bytes.
template <bool kAligned>
__device__ __forceinline__ void write_table(uint8_t* dst, const ans::Table& t) {
  write_head<kAligned>(dst, t);
  const uint32_t e = 32 + 2 * static_cast<uint32_t>(t.nsym), end = static_cast<uint32_t>(format::align_up(e));
  if (e + lanes::lane() < end) dst[e + lanes::lane()] = 0;
}

template <DType T, bool kFused, bool kAligned, int kVariant>
struct BlockEncoder {
  using C = split::Chunk<T>;
  static constexpr bool kStreamed = kVariant == kStream;
  static constexpr bool kEntry16 = kStreamed ? kStreamEntry16<T> : !kEntry8;
  using Layout = TableLayout<kEntry16>;
  using Entry = typename Layout::Entry;
  static constexpr int kLoadBatch = kStreamed ? 1 : kVariant == kNarrow ? MPIZIP_ENC_NARROW_BATCH : kBatch;
  static constexpr int kFullLoadBatch = kStreamed           ? MPIZIP_ENC_STREAM_FULL_BATCH
                                        : kVariant == kNarrow ? MPIZIP_ENC_NARROW_FULL_BATCH
                                        : kVariant == kMid    ? (T == DType::kE5m2 ? 2 : MPIZIP_ENC_MID_FULL_BATCH)
                                                              : kFullBatch;
  static constexpr int kEb = static_cast<int>(format::elem_bytes(T));
  static constexpr int kWinChunks = encode::kWinChunks<T>;
  static constexpr int kWinGroups = encode::kWinGroups<T>;

  const Params& p;
  uint8_t* buf;      // shared-memory instantiations: symbols, then words; streamed: one window's symbols
  uint8_t* words;    // the words: buf, or the streamed group's scratch slot (global)
  uint8_t* ring;     // streamed: where the words are gathered (shared memory)
  Entry* table;      // per symbol (see Entry)
  uint8_t* flags;
  uint32_t* counts;  // aliases table until the table is built

  // One chunk: its symbols to buf (local chunk c), presence and sampled counts, raw bits, and its
  // checksum terms.
  __device__ __forceinline__ uint64_t split_chunk(const Item& it, int plane, uint64_t gc, uint32_t c, uint32_t n,
                                  const uint32_t (&in)[4], bool write_raw, bool sum) {
    uint32_t sym[2][4], raw[2][2];
    C::split(in, sym, raw);
    uint32_t s[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) s[w] = plane ? sym[C::kPlanes - 1][w] : sym[0][w];
    if constexpr (!kStreamed) bytes::st_n<true>(buf + c * C::kSyms, C::kSyms, s);
#pragma unroll
    for (int q = 0; q < C::kSyms; ++q) {
      if (c * C::kSyms + q < n) {
        const uint32_t v = (s[q / 4] >> (8 * (q % 4))) & 0xFF;
        flags[v] = 1;
        if (q % kSample == 0) atomicAdd(&counts[v], 1u);
      }
    }
    if (write_raw) split::store_raw<T, kAligned>(it.dst, it.count, gc, raw);
    uint64_t h = 0;
    if (sum) {
      const uint64_t nbytes = it.count * kEb, off = gc * 16;
#pragma unroll
      for (int w = 0; w < 4; ++w)
        if (off + 4 * w < nbytes) h += format::mix64(((off / 4 + w) << 32) | in[w]);
    }
    return h;
  }

  // The split of a whole block whose every chunk lies inside the input (and inside the raw
  // sections): no per-symbol, per-load or per-store bounds, 32-bit offsets from per-block bases,
  // one byte permute per symbol. v7's general path executed ~120 instructions a 16-byte chunk (bf16),
  // half of them bounds in 64 bits; this one about 50. Same symbols, flags, counts, raw bytes and
  // checksum terms as split_chunk.
  __device__ __forceinline__ uint64_t split_full(const Item& it, int plane, uint64_t chunk0, uint32_t nch,
                                                 bool write_raw, bool sum) {
    constexpr int kRawPlanes = format::raw_subplanes(T);
    constexpr int kBatch = kFullLoadBatch;
    constexpr uint32_t kStep = lanes::kLanes * kBatch;
    const int lane = lanes::lane();
    // Per-lane bases, advanced by a batch each turn, so every access in a turn is the base
    // plus a constant (no per-chunk address registers).
    const uint8_t* src = it.src + (chunk0 + lane) * 16;
    uint8_t* raw_at[2] = {nullptr, nullptr};
#pragma unroll
    for (int r = 0; r < kRawPlanes; ++r)
      raw_at[r] = it.dst + format::raw_subplane_offset(T, it.count, r) + (chunk0 + lane) * split::raw_unit<T>(r);
    uint8_t* sym_at = buf + lane * C::kSyms;
    uint64_t word = (chunk0 + lane) * 4;  // checksum: the index of the chunk's first 32-bit word
    uint64_t h = 0;
    // One batch a turn (the loop not unrolled): the next batch's loads go out at the top of the turn
    // and their registers are moved at its end.
    uint32_t cur[kBatch][4], nxt[kBatch][4];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (lanes::kLanes * u < nch) bytes::ld128<kAligned>(src + 16 * lanes::kLanes * u, cur[u]);
#pragma unroll 1
    for (uint32_t c0 = 0; c0 < nch; c0 += kStep) {
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (c0 + kStep + lanes::kLanes * u < nch) bytes::ld128<kAligned>(src + 16 * (kStep + lanes::kLanes * u), nxt[u]);
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        if (c0 + lanes::kLanes * u >= nch) continue;  // the same in every lane: chunk c0 + 32 u + lane
        const uint32_t d = lanes::kLanes * u;          // the chunk's distance from the bases
        uint32_t sym[2][4], raw[2][2];
        C::split(cur[u], sym, raw);
        uint32_t s[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) s[w] = plane ? sym[C::kPlanes - 1][w] : sym[0][w];
        if constexpr (!kStreamed) bytes::st_n<true>(sym_at + d * C::kSyms, C::kSyms, s);
#pragma unroll
        for (int q = 0; q < C::kSyms; ++q) {
          const uint32_t v = __byte_perm(s[q / 4], 0, 0x4440 | (q % 4));
          flags[v] = 1;
          if (q % kSample == 0) atomicAdd(&counts[v], 1u);
        }
        if (write_raw) {
#pragma unroll
          for (int r = 0; r < kRawPlanes; ++r)
            bytes::st_n<kAligned>(raw_at[r] + d * split::raw_unit<T>(r), split::raw_unit<T>(r), raw[r]);
        }
        if (sum) {
#pragma unroll
          for (int w = 0; w < 4; ++w) h += format::mix64(((word + 4 * d + w) << 32) | cur[u][w]);
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
#pragma unroll
        for (int w = 0; w < 4; ++w) cur[u][w] = nxt[u][w];
      src += 16 * kStep;
#pragma unroll
      for (int r = 0; r < kRawPlanes; ++r) raw_at[r] += kStep * split::raw_unit<T>(r);
      sym_at += kStep * C::kSyms;
      word += 4 * kStep;
    }
    lanes::sync();
    return h;
  }

  // Phase 1: symbols of plane `plane` for symbols [k B, k B + n) to buf (the streamed instantiation
  // only counts them); raw bits and checksum terms too when this is plane 0 of the fused kernel.
  __device__ __forceinline__ uint64_t split(const Item& it, int plane, uint64_t k, uint32_t n, bool write_raw, bool sum) {
    const int lane = lanes::lane();
    const uint64_t nbytes = it.count * kEb;
    const uint64_t chunk0 = (k << p.log2_block) / C::kSyms;
    const uint32_t nch = (n + C::kSyms - 1) / C::kSyms;
    // The streamed instantiation's block input goes to L2 first, in one bulk prefetch (added when
    // its split phase had one chunk a lane in flight; not measured on its own since it has four).
    if (kStreamed && kAligned && lane == 0 && chunk0 * 16 < nbytes)
      bytes::prefetch_l2(it.src + chunk0 * 16, static_cast<uint32_t>(min(uint64_t{nch} * 16, nbytes - chunk0 * 16) & ~uint64_t{15}));
    // A SHARED_TABLE launch counts here too: the block's counts decide between its own table and
    // its plane's (the count stage's), and give its own where it keeps one.
    for (int i = lane; i < 256 / 4 + 256 / 16; i += lanes::kLanes) {
      if (i < 64) reinterpret_cast<uint4*>(counts)[i] = make_uint4(0, 0, 0, 0);
      else reinterpret_cast<uint4*>(flags)[i - 64] = make_uint4(0, 0, 0, 0);
    }
    lanes::sync();
    // A whole block inside the input and the raw sections (every block but an input's last, as a
    // rule) takes the path without bounds.
    bool full = n == (1u << p.log2_block) && (chunk0 + nch) * 16 <= nbytes;
#pragma unroll
    for (int r = 0; r < format::raw_subplanes(T); ++r)
      full = full && (!write_raw || (chunk0 + nch) * split::raw_unit<T>(r) <= format::raw_subplane_bytes(T, it.count, r));
    if (full) return split_full(it, plane, chunk0, nch, write_raw, sum);
    uint64_t h = 0;
    // Chunks go in batches of kBatch per lane, the next batch's loads in flight while this one is
    // split: a group keeps 4 KiB of loads in flight (the narrow instantiation 2 KiB).
    constexpr int kBatch = kLoadBatch;
    constexpr uint32_t kStep = lanes::kLanes * kBatch;
    uint32_t in[2][kBatch][4];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (lane + lanes::kLanes * u < nch) split::load_input<kAligned>(it.src, nbytes, chunk0 + lane + lanes::kLanes * u, in[0][u]);
    for (uint32_t c0 = 0; c0 < nch; c0 += 2 * kStep) {
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const uint32_t cb = c0 + b * kStep + lane;
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const uint32_t c = cb + kStep + lanes::kLanes * u;
          if (c < nch) split::load_input<kAligned>(it.src, nbytes, chunk0 + c, in[b ^ 1][u]);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
          const uint32_t c = cb + lanes::kLanes * u;
          if (c < nch) h += split_chunk(it, plane, chunk0 + c, c, n, in[b][u], write_raw, sum);
        }
      }
    }
    lanes::sync();
    return h;
  }

  __device__ __forceinline__ static Entry entry(uint32_t mp, uint32_t f, uint32_t c, uint32_t kk, uint32_t m, uint64_t xmax) {
    if constexpr (kEntry16) {
      return make_uint4(mp, xmax > 0xFFFFFFFFull ? 0xFFFFFFFFu : static_cast<uint32_t>(xmax), m - f, (c << 5) | kk);
    } else {
      (void)m;
      (void)xmax;
      return make_uint2(mp, kk | (c << 5) | (f << 16));
    }
  }

  // Phase 2: the table, from presence flags and sampled counts. In a SHARED_TABLE launch the block
  // takes its plane's table (the count stage's image of it) unless its own is cheaper (own), by the
  // block's sampled counts: a symbol of frequency f costs PB - log2 f bits, on the block's own table
  // about PB - log2(c M / n) for a count c of n, and the own table costs its head besides. The
  // block's own estimate comes before the wait for the count stage, so that after it only the
  // image's load, one sum and the plane's entries remain.
  __device__ __forceinline__ ans::Table build_table(int i, int plane, bool& own) {
    const int lane = lanes::lane();
    const uint32_t m = 1u << p.prob_bits;
    uint32_t cnt[ans::kSymsPerLane];
    bool present[ans::kSymsPerLane];
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      cnt[j] = counts[lane + 32 * j];
      present[j] = flags[lane + 32 * j] != 0;
    }
    lanes::sync();  // counts alias the table
    ans::Table t;
    own = true;
    if (p.counts) {
      uint32_t n = 0, np = 0;
      float clc = 0.f;
#pragma unroll
      for (int j = 0; j < ans::kSymsPerLane; ++j) {
        n += cnt[j];
        np += present[j];
        if (cnt[j]) clc += static_cast<float>(cnt[j]) * __log2f(static_cast<float>(cnt[j]));
      }
      n = lanes::sum(n);
      // Sum of c log2 f over the sample on the block's own table, f = c M / n.
      const float nf = static_cast<float>(n);
      const float own_lf = lanes::sum(clc) + nf * (static_cast<float>(p.prob_bits) - (n ? __log2f(nf) : 0.f));
      const float head_bits = 8.f * static_cast<float>(format::block_table_bytes(lanes::sum(np)));
      count_stage_done();
      // (Read past the caches: the count stage wrote it in this launch, at the address the
      // previous launch's table had.)
      const volatile uint64_t* img = reinterpret_cast<const volatile uint64_t*>(p.counts + count_words_at(i, plane) + kImageAt);
      uint2 e[ans::kSymsPerLane];
#pragma unroll
      for (int j = 0; j < ans::kSymsPerLane; ++j) {
        const uint64_t v = img[lane + 32 * j];
        e[j] = make_uint2(static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32));
      }
      float plane_lf = 0.f;
#pragma unroll
      for (int j = 0; j < ans::kSymsPerLane; ++j)
        if (cnt[j]) plane_lf += static_cast<float>(cnt[j]) * __log2f(static_cast<float>(e[j].x & 0xFFFFu));
      own = kSample * (own_lf - lanes::sum(plane_lf)) > head_bits;
      if (!own) {
        // The plane's table: its entries from the image (no head in the stream).
        t.nsym = 0;
#pragma unroll
        for (int j = 0; j < ans::kSymsPerLane; ++j) {
          const uint32_t f = e[j].x & 0xFFFFu;
          t.f[j] = f;
          t.c[j] = e[j].x >> 16;
          t.bm[j] = lanes::ballot(f != 0);
          t.nsym += lanes::popc(t.bm[j]);
          if (f) table[lane + 32 * j] = entry(e[j].y, f, t.c[j], divisor_shift(f), m, uint64_t{f} << (32 - p.prob_bits));
        }
        lanes::sync();
        return t;
      }
    }
    ans::normalize(cnt, present, p.prob_bits, t);
    t.cumulate();
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      const uint32_t f = t.f[j];
      if (f) {
        const Divisor d = divisor(f);
        table[lane + 32 * j] = entry(d.mp, f, t.c[j], d.k, m, uint64_t{f} << (32 - p.prob_bits));
      }
    }
    lanes::sync();
    return t;
  }

  // The fallback table: all 256 symbols at f = 2^(PB-8) (floor(x / f) = x >> (PB - 8), m' = 0).
  __device__ __forceinline__ ans::Table build_flat() {
    const int lane = lanes::lane();
    const uint32_t kk = static_cast<uint32_t>(p.prob_bits - 8), f = 1u << kk, m = 1u << p.prob_bits;
    ans::Table t;
    t.nsym = 256;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      t.f[j] = f;
      t.c[j] = static_cast<uint32_t>(lane + 32 * j) << kk;
      t.bm[j] = 0xFFFFFFFFu;
      table[lane + 32 * j] = entry(0, f, t.c[j], kk, m, uint64_t{f} << (32 - p.prob_bits));
    }
    lanes::sync();
    return t;
  }

  // One group's step: symbol entry e into the lane's state x, a word out first where x would
  // overflow, the group's words compacted below pos (the same in every lane).
  __device__ __forceinline__ void step(const Entry& e, bool active, uint32_t& x, uint32_t& pos, uint32_t lt) const {
    const uint32_t sh = 32 - p.prob_bits, m = 1u << p.prob_bits;
    uint32_t z, w;
    bool emit;
    if constexpr (kEntry16) {
      (void)sh;
      (void)m;
      emit = active && x >= e.y;
      z = e.z, w = e.w;
    } else {
      // x >= f << (32 - PB), as x > (f << (32 - PB)) - 1: right for f = M too (never).
      const uint32_t f = e.y >> 16;
      emit = active && x > (f << sh) - 1;
      z = m - f, w = e.y & 0xFFFF;
    }
    const uint32_t b = lanes::ballot(emit);
    pos -= 2 * lanes::popc(b);
    if (emit) {
      const uint32_t at = pos + 2 * lanes::popc(b & lt);
      if constexpr (kStreamed) *reinterpret_cast<uint16_t*>(ring + (at & (kRingBytes - 1))) = static_cast<uint16_t>(x);
      else *reinterpret_cast<uint16_t*>(words + at) = static_cast<uint16_t>(x);
    }
    x = emit ? x >> 16 : x;
    if (active) {
      const uint32_t q = __funnelshift_r(x + __umulhi(x, e.x), 0, w);
      x += q * z + (w >> 5);
    }
  }

  // A block's chain before its first step: the lane's state, pos at the words' top; its last group,
  // whether this lane has a symbol in it, and the mask of the lanes below this one.
  struct Chain {
    int g_last;
    bool last_active;
    uint32_t lt;
  };
  __device__ __forceinline__ Chain start(uint32_t n, uint32_t& x, uint32_t& pos) const {
    pos = words_top(p.log2_block, p.prob_bits);
    x = format::kAnsLow;
    const int g_last = static_cast<int>((n + 31) / 32) - 1;
    return {g_last, g_last * 32 + lanes::lane() < static_cast<int>(n), lanes::mask_lt()};
  }

  // Phase 3: rANS over buf[0, n), groups last to first; leaves in pos the byte offset in buf of the
  // first word (words end at words_top) and the lane's final state in x. False (the block unfinished)
  // when the words would reach symbols not yet read.
  //
  // The rule for giving up, the same in both ways of holding a block (so that both write the same
  // stream): before each group g = 3 mod 4 below the last, pos >= 32 (g + 5). Groups from there are
  // coded four at a time, their symbols and entries loaded four groups ahead: batch g reads groups
  // g-4..g-7, below 32 (g - 3), and writes at most 256 bytes, so the words leave every unread symbol
  // intact. The groups above the first such g (at most four, the last one included) write at most
  // 256 bytes, inside the 320 that words_top keeps above every symbol, and need no check.
  __device__ __forceinline__ bool encode(uint32_t n, uint32_t& x, uint32_t& pos) {
    const auto [g_last, last_active, lt] = start(n, x, pos);
    const int lane = lanes::lane();
    step(table[last_active ? buf[g_last * 32 + lane] : 0], last_active, x, pos, lt);
    int g = g_last - 1;
    for (; g >= 0 && (g & 3) != 3; --g) step(table[buf[g * 32 + lane]], true, x, pos, lt);
    Entry next[4];
    if (g >= 3) {
#pragma unroll
      for (int u = 0; u < 4; ++u) next[u] = table[buf[(g - u) * 32 + lane]];
    }
    bool ok = true;
    for (; g >= 3; g -= 4) {
      if (pos < 32u * static_cast<uint32_t>(g + 5)) {
        ok = false;
        break;
      }
      Entry e[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) e[u] = next[u];
      if (g >= 7) {
#pragma unroll
        for (int u = 0; u < 4; ++u) next[u] = table[buf[(g - 4 - u) * 32 + lane]];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) step(e[u], true, x, pos, lt);
    }
    lanes::sync();
    return ok;
  }

  // The streamed instantiation's window w of a block: the lane's chunks w 32 kWinChunks + lane + 32 u
  // of the block's nch (from the input's chunk chunk0), to registers.
  __device__ __forceinline__ void load_window(const Item& it, uint64_t chunk0, uint32_t nch, uint32_t w,
                                              uint32_t (&in)[kWinChunks][4]) const {
    const uint64_t nbytes = it.count * kEb;
    const uint32_t c0 = w * 32 * kWinChunks + lanes::lane();
    if ((chunk0 + (w + 1) * 32 * kWinChunks) * 16 <= nbytes) {
      // The whole window inside the input (chunks past the block's end are loaded and not used).
      const uint8_t* src = it.src + (chunk0 + c0) * 16;
#pragma unroll
      for (int u = 0; u < kWinChunks; ++u) bytes::ld128<kAligned>(src + 16 * 32 * u, in[u]);
    } else {
#pragma unroll
      for (int u = 0; u < kWinChunks; ++u) {
        in[u][0] = in[u][1] = in[u][2] = in[u][3] = 0;
        if (c0 + 32 * u < nch) split::load_input<kAligned>(it.src, nbytes, chunk0 + c0 + 32 * u, in[u]);
      }
    }
  }

  // The window's symbols of plane `plane` to buf: group j's symbol for lane l at buf[32 j + l].
  __device__ __forceinline__ void split_window(int plane, const uint32_t (&in)[kWinChunks][4]) {
    const int lane = lanes::lane();
#pragma unroll
    for (int u = 0; u < kWinChunks; ++u) {
      uint32_t sym[2][4], raw[2][2], s[4];
      C::split(in[u], sym, raw);
#pragma unroll
      for (int w = 0; w < 4; ++w) s[w] = plane ? sym[C::kPlanes - 1][w] : sym[0][w];
      bytes::st_n<true>(buf + (lane + 32 * u) * C::kSyms, C::kSyms, s);
    }
  }

  // The streamed instantiation's words in [lo, flushed) (lo a multiple of 16, the whole range written)
  // from the ring to the scratch slot, 16 bytes a lane.
  __device__ __forceinline__ void flush(uint32_t lo, uint32_t& flushed) {
    lanes::sync();
    for (uint32_t u = lo + 16 * lanes::lane(); u < flushed; u += 16 * lanes::kLanes)
      *reinterpret_cast<uint4*>(words + u) = *reinterpret_cast<const uint4*>(ring + (u & (kRingBytes - 1)));
    flushed = lo;
  }

  // Phase 3 of the streamed instantiation: encode() for block k of plane `plane`, its symbols split
  // again from the input a window at a time, last window first (the next window's loads in flight
  // while this one is coded), its words to the group's scratch slot. It gives up by encode()'s rule;
  // windows start at multiples of four groups, so in a whole window the checks fall on fixed groups.
  __device__ __forceinline__ bool encode_streamed(const Item& it, int plane, uint64_t k, uint32_t n, uint32_t& x,
                                                  uint32_t& pos) {
    const auto [g_last, last_active, lt] = start(n, x, pos);
    const int lane = lanes::lane();
    const uint64_t chunk0 = (k << p.log2_block) / C::kSyms;
    const uint32_t nch = (n + C::kSyms - 1) / C::kSyms;
    const int w_last = g_last / kWinGroups;
    uint32_t flushed = pos;  // the words above it are in the scratch slot
    uint32_t in[kWinChunks][4];
    load_window(it, chunk0, nch, static_cast<uint32_t>(w_last), in);
    bool ok = true;
    for (int w = w_last; ok && w >= 0; --w) {
      lanes::sync();  // the last window's symbols are read
      split_window(plane, in);
      lanes::sync();
      if (w > 0) load_window(it, chunk0, nch, static_cast<uint32_t>(w - 1), in);
      const int g0 = w * kWinGroups;
      if (w == w_last) {
        for (int g = g_last; g >= g0; --g) {
          if (g < g_last && (g & 3) == 3 && pos < 32u * static_cast<uint32_t>(g + 5)) {
            ok = false;
            break;
          }
          const bool active = g < g_last || last_active;
          step(table[active ? buf[(g - g0) * 32 + lane] : 0], active, x, pos, lt);
        }
      } else {
        // A whole window below the last group: every lane active, every offset a constant.
        static_assert(kWinGroups % 4 == 0, "a window is whole batches of four groups");
#pragma unroll
        for (int j = kWinGroups - 1; j >= 0; --j) {
          if ((j & 3) == 3 && pos < 32u * static_cast<uint32_t>(g0 + j + 5)) {
            ok = false;
            break;
          }
          step(table[buf[j * 32 + lane]], true, x, pos, lt);
        }
      }
      flush((pos + 15) & ~15u, flushed);
    }
    if (ok) flush(pos & ~15u, flushed);
    lanes::sync();
    return ok;
  }

  // Phase 5: the block at dst (its final place): bitmap and frequencies (write_head, or from the
  // streamed group's scratch, copy_head), then states, words and padding (write).
  // The streamed instantiation wrote the head to its scratch (16-byte aligned) when it built the
  // table, so that the table need not stay in registers while the block is coded.
  __device__ __forceinline__ static void copy_head(uint8_t* dst, const uint8_t* head, uint32_t bytes) {
    for (uint32_t b = 4 * lanes::lane(); b < bytes; b += 4 * lanes::kLanes)
      bytes::st32<kAligned>(dst + b, *reinterpret_cast<const uint32_t*>(head + b));
  }
  __device__ __forceinline__ void write(uint8_t* dst, uint32_t x, uint32_t pos, uint32_t hb, uint32_t size) {
    const int lane = lanes::lane();
    const uint32_t top = words_top(p.log2_block, p.prob_bits), nw = (top - pos) / 2;
    bytes::st32<kAligned>(dst + hb - 128 + 4 * lane, x);
    if constexpr (kStreamed) {
      // From global scratch: a batch's loads all go out before its stores (the compiler cannot
      // reorder them: scratch and destination might alias, as far as it knows).
      constexpr int kCopy = 8;
      for (uint32_t w0 = lane; w0 < nw; w0 += kCopy * lanes::kLanes) {
        uint32_t v[kCopy];
#pragma unroll
        for (int u = 0; u < kCopy; ++u) {
          const uint32_t w = w0 + u * lanes::kLanes;
          v[u] = w < nw ? *reinterpret_cast<const uint16_t*>(words + pos + 2 * w) : 0;
        }
#pragma unroll
        for (int u = 0; u < kCopy; ++u) {
          const uint32_t w = w0 + u * lanes::kLanes;
          if (w < nw) bytes::st16<kAligned>(dst + hb + 2 * w, v[u]);
        }
      }
    } else {
      for (uint32_t w = lane; w < nw; w += lanes::kLanes)
        bytes::st16<kAligned>(dst + hb + 2 * w, *reinterpret_cast<const uint16_t*>(words + pos + 2 * w));
    }
    const uint32_t end = hb + 2 * nw;
    if (end + lane < size) dst[end + lane] = 0;
  }
};

// Measurement build only (-DMPIZIP_ENC_PROF=1): cycles per phase of every block, summed over a
// launch (lane 0's clock), printed by the launcher after each launch. Not in normal builds.
#ifndef MPIZIP_ENC_PROF
#define MPIZIP_ENC_PROF 0
#endif
#if MPIZIP_ENC_PROF
}  // namespace mpizip::kernels::encode
#include <cstdio>
namespace mpizip::kernels::encode {
inline constexpr int kProfSlots = 8;  // ticket, split, table, encode, look-back, write, blocks
__device__ unsigned long long g_prof[kProfSlots];
inline void report_prof(gpuStream_t stream, int lb, uint64_t blocks, int grid) {
  unsigned long long h[kProfSlots] = {};
  (void)gpuStreamSynchronize(stream);
  (void)cudaMemcpyFromSymbol(h, g_prof, sizeof h);
  const unsigned long long z[kProfSlots] = {};
  (void)cudaMemcpyToSymbol(g_prof, z, sizeof z);
  const double n = h[6] ? double(h[6]) : 1.0;
  std::fprintf(stderr, "encprof lb %d blocks %llu grid %d cycles/block ticket %.0f split %.0f table %.0f encode %.0f "
               "lookback %.0f write %.0f\n", lb, static_cast<unsigned long long>(blocks), grid, h[0] / n, h[1] / n,
               h[2] / n, h[3] / n, h[4] / n, h[5] / n);
}
#define MPIZIP_PROF_MARK(i)                                                     \
  do {                                                                          \
    const long long now_ = clock64();                                           \
    if (lane == 0 && (i) >= 0) atomicAdd(&g_prof[(i)], static_cast<unsigned long long>(now_ - prof_t_)); \
    prof_t_ = now_;                                                             \
  } while (0)
#else
#define MPIZIP_PROF_MARK(i) \
  do {                      \
  } while (0)
#endif

// The kernel's body: each group takes block tickets until none is left; the last group to finish
// publishes the results.
//
// A block's place in the stream (the look-back) waits until every block before it is coded. A
// shared-memory group waits there, its block's words in its shared memory. A streamed group's block
// is in its scratch slot, so the group holds it: it takes its next ticket and runs that block's
// split phase (which writes nothing to the slot) before it looks back for the one it holds and
// writes it out, by when the blocks before it are mostly done.
template <DType T, bool kFused, bool kAligned, int kVariant>
__device__ void run(const Params& p, uint8_t* smem) {
  constexpr int kEb = static_cast<int>(format::elem_bytes(T));
  const int lane = lanes::lane();
  const uint32_t epoch = scan::launch_epoch(p.state);
  const uint32_t top = words_top(p.log2_block, p.prob_bits);
  constexpr bool kStreamed = kVariant == kStream;
  // A group's shared memory: symbols and words, or (streamed) one window's symbols and the ring; then
  // the table.
  using Enc = BlockEncoder<T, kFused, kAligned, kVariant>;
  using Layout = typename Enc::Layout;
  const uint32_t below_table = kStreamed ? stream_group_smem_bytes<T>() - Layout::kAreaBytes : top;
  uint8_t* gs = smem + lanes::group() * (below_table + Layout::kAreaBytes);
  // The streamed group's scratch slot: the block's head (bitmap and frequencies), then its words.
  uint8_t* head = nullptr;
  uint8_t* words = gs;
  if constexpr (kStreamed) {
    head = p.scratch + (uint64_t{blockIdx.x} * (blockDim.x / lanes::kLanes) + lanes::group()) * p.slot_bytes;
    words = head + kHeadBytes;
  }
  const uint32_t bsz = 1u << p.log2_block;
  const uint32_t total = p.first[p.n];
  Enc enc{p, gs, words, kStreamed ? gs + (below_table - kRingBytes) : nullptr,
          reinterpret_cast<typename Enc::Entry*>(gs + below_table), gs + below_table + Layout::kFlagsAt,
          reinterpret_cast<uint32_t*>(gs + below_table)};
  ans::Table tab;
#if MPIZIP_ENC_PROF
  long long prof_t_ = clock64();
#endif
  // Block t, coded (lane states x, words from pos, head and states hb bytes, size in all): its place
  // in the stream, then the block written there (head from tab, or from the streamed slot), its
  // entry in the block table, and the buffer's header and end where it is the first or the last.
  const auto place = [&](uint32_t t, uint32_t x, uint32_t pos, uint32_t hb, uint32_t size, bool own) {
    int i = 0;
    while (t >= p.first[i + 1]) ++i;
    const Item& it = p.item[i];
    const uint32_t j = t - p.first[i];
    const uint64_t nblocks = format::total_blocks(T, it.count, p.log2_block);
    const uint64_t co = format::coded_offset(T, it.count);
    // The block table's padded end, and where the blocks start (after the plane tables, if shared).
    const uint64_t bt_end = co + format::block_data_offset(T, it.count, p.log2_block);
    const PlaneTables pt = p.counts ? plane_tables<T>(p.counts, i) : PlaneTables{{0, 0}, 0};
    const uint64_t data_off = bt_end + pt.bytes;
    const uint64_t off = scan::look_back(p.entries, p.first[i], t, epoch);
    if (lane == 0) scan::publish(p.entries, t, epoch, scan::kFlagInclusive, off + size);
    MPIZIP_PROF_MARK(4);
    if (data_off > it.cap || data_off + off + size > it.cap) {
      if (lane == 0) scan::record_error(p.state, i, static_cast<int32_t>(Status::kTruncated));
      return;
    }
    uint8_t* dst = it.dst + data_off + off;
    // (SHARED_TABLE: the count stage wrote the plane tables.)
    if (own) {
      if constexpr (kStreamed) enc.copy_head(dst, head, hb - 128);
      else write_head<kAligned>(dst, tab);
    }
    enc.write(dst, x, pos, hb, size);
    uint8_t* coded = it.dst + co;
    // In a SHARED_TABLE stream bit 0 of the entry marks a block with its own table.
    if (lane == 0) bytes::st64<kAligned>(coded + 16 + 8 * j, (off + size) | (p.counts && own ? 1u : 0u));
    if (j == 0) {
      if (kFused) {
        write_header(it.dst, T, it.count, coded_flags(p.checksum, p.counts != nullptr), p.log2_block, p.prob_bits,
                     format::raw_bytes(T, it.count));
        split::zero_raw_padding<T>(it.dst, it.count, lane);
      }
      const uint64_t tbl_end = 16 + 8 * nblocks, pad_end = bt_end - co;
      if (tbl_end + lane < pad_end) coded[tbl_end + lane] = 0;
      if (lane == 0) bytes::st64<kAligned>(coded + 8, 0);
    }
    if (j == nblocks - 1 && lane == 0) {
      const uint64_t coded_bytes = data_off - co + off + size;
      bytes::st64<kAligned>(coded, coded_bytes);
      p.results[i].size = co + coded_bytes;
    }
    MPIZIP_PROF_MARK(5);
  };
  // The streamed group's held block (held_t == total: none).
  uint32_t held_t = total, held_x = 0, held_pos = 0, held_hb = 0, held_size = 0;
  for (;;) {
    const uint32_t t = scan::take_ticket(p.state);
    const bool have = t < total;
    int i = 0;
    uint32_t n = 0, j = 0;
    uint64_t k = 0;
    int plane = 0;
    if (have) {
      MPIZIP_PROF_MARK(0);
      while (t >= p.first[i + 1]) ++i;
      const Item& it = p.item[i];
      j = t - p.first[i];
      const uint64_t nbytes = it.count * kEb;
      if ((p.stored >> i) & 1) {
        // Tiny input: header and the original bytes, written whole by the split stage when not fused.
        const bool fits = format::kHeaderBytes + nbytes <= it.cap;
        if (kFused && fits) {
          write_header(it.dst, T, it.count, format::kFlagStored, p.log2_block, p.prob_bits, 0);
          for (uint64_t b = lane; b < nbytes; b += lanes::kLanes) it.dst[format::kHeaderBytes + b] = it.src[b];
        }
        if (lane == 0) {
          if (!fits) scan::record_error(p.state, i, static_cast<int32_t>(Status::kTruncated));
          p.results[i].size = format::kHeaderBytes + nbytes;
        }
        continue;
      }
      const uint64_t nsym = format::symbols_per_plane(T, it.count);
      const uint64_t nbpp = format::blocks_per_plane(T, it.count, p.log2_block);
      plane = static_cast<int>(j / nbpp);
      k = j % nbpp;
      n = static_cast<uint32_t>(min(uint64_t{bsz}, nsym - (k << p.log2_block)));
      const uint64_t data_off = format::coded_offset(T, it.count) + format::block_data_offset(T, it.count, p.log2_block);
      const bool room = data_off <= it.cap;
      const uint64_t h = enc.split(it, plane, k, n, kFused && plane == 0 && room, p.checksum && plane == 0);
      if (p.checksum && plane == 0) {
        const uint64_t hs = lanes::sum(h);
        if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[i]), hs);
      }
      MPIZIP_PROF_MARK(1);
    }
    if constexpr (kStreamed) {
      if (held_t < total) place(held_t, held_x, held_pos, held_hb, held_size, true);
      held_t = total;
    }
    if (!have) break;
    const Item& it = p.item[i];
    bool own = true;
    tab = enc.build_table(i, plane, own);
    int present = tab.nsym;
    if constexpr (kStreamed) write_head<kAligned>(head, tab);
    MPIZIP_PROF_MARK(2);
    uint32_t x, pos;
    const auto encode = [&] { return kStreamed ? enc.encode_streamed(it, plane, k, n, x, pos) : enc.encode(n, x, pos); };
    if (!encode()) {
      // Words past the slack: the symbols again, and the flat table, whose words always fit, as
      // the block's own. A block on its plane's table (SHARED_TABLE: blocks of at most 4096
      // symbols, whose words stay under the proven bound, words_top) never gets here.
      bool recoded = false;
      if (own) {
        if constexpr (!kStreamed) enc.split(it, plane, k, n, false, false);
        tab = enc.build_flat();
        present = tab.nsym;
        if constexpr (kStreamed) write_head<kAligned>(head, tab);
        recoded = encode();
      }
      if (!recoded) {
        if (lane == 0) scan::record_error(p.state, i, static_cast<int32_t>(Status::kInternal));
        pos = top;
      }
    }
    const uint32_t hb = (own ? static_cast<uint32_t>(format::block_table_bytes(present)) : 0) + 128;
    const uint32_t size = static_cast<uint32_t>(format::align_up(hb + (top - pos)));
    MPIZIP_PROF_MARK(3);
    if (lane == 0) scan::publish(p.entries, t, epoch, scan::kFlagAggregate, size);
    if constexpr (kStreamed) {
      held_t = t, held_x = x, held_pos = pos, held_hb = hb, held_size = size;
    } else {
      place(t, x, pos, hb, size, own);
    }
#if MPIZIP_ENC_PROF
    if (lane == 0) atomicAdd(&g_prof[6], 1ull);
#endif
  }
  if (!scan::finish(p.state)) return;
  // The last group: every other group's writes are visible, and every group is done with the
  // counts, which it leaves zero for the next launch. Checksums and statuses go out.
  if (p.counts)
    for (uint32_t w = lane; w < 2u * kZeroWords * static_cast<uint32_t>(p.n); w += lanes::kLanes)
      p.counts[(w / kZeroWords) * kCountWords + w % kZeroWords] = 0;
  for (int i = lane; i < p.n; i += lanes::kLanes) {
    const int32_t err = p.state->err[i];
    const Item& it = p.item[i];
    if (!err && p.checksum && !((p.stored >> i) & 1))
      bytes::st64<false>(it.dst + format::coded_offset(T, it.count) + 8, p.state->checksum[i]);
    if (err) p.results[i].size = 0;
    p.results[i].status = err;
  }
  scan::reset(p.state, p.n, epoch);
}

}  // namespace mpizip::kernels::encode
