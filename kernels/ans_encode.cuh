// The GPU encoder: one 32-lane group codes one block of one symbol plane, start to finish, inside a
// single launch. Phases per block: split (symbols to shared memory, raw bits to the stream,
// presence and sampled counts), table (frequencies normalised in the group), rANS encode (groups
// of 32 symbols walked backward, renormalisation words compacted with a ballot), look-back (the
// block's place in the stream), write-out. The fused kernel also writes the header and raw section;
// the encode-only kernel leaves them to the split kernel (kernels/split_kernel.cuh).
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
enum Variant : int { kWide = 0, kMid = 1, kNarrow = 2 };
#ifndef MPIZIP_ENC_MID_FULL_BATCH
#define MPIZIP_ENC_MID_FULL_BATCH 4
#endif
#ifndef MPIZIP_ENC_NARROW_FULL_BATCH
#define MPIZIP_ENC_NARROW_FULL_BATCH 2
#endif
#ifndef MPIZIP_ENC_NARROW_BATCH
#define MPIZIP_ENC_NARROW_BATCH 4
#endif
// Table entries of 8 bytes ({m', k | c << 5 | f << 16}: x_max and M - f derived in the step, 2 KiB
// a table, presence flags inside it) instead of 16 ({m', x_max, M - f, c << 5 | k}): 11 groups a
// multiprocessor at 16384-symbol blocks instead of 10, bf16 1 GiB 2355 -> 2152 us (v6, measured).
#ifndef MPIZIP_ENC_ENTRY8
#define MPIZIP_ENC_ENTRY8 1
#endif
inline constexpr bool kEntry8 = MPIZIP_ENC_ENTRY8;
using Entry = std::conditional_t<kEntry8, uint2, uint4>;
// Bytes after the words: the table (the sampled counts alias it until it is built), the flags.
inline constexpr uint32_t kFlagsAt = kEntry8 ? 1024 : 256 * 16;
inline constexpr uint32_t kTableAreaBytes = kEntry8 ? 256 * 8 : 256 * 16 + 256;

struct Item {
  const uint8_t* src;
  uint64_t count;  // elements
  uint8_t* dst;
  uint64_t cap;    // bytes
};

struct Params {
  Item item[scan::kMaxItems];
  uint32_t first[scan::kMaxItems + 1];  // item i owns tickets [first[i], first[i + 1])
  uint64_t stored;                      // bit i: item i is written STORED
  int n;
  int log2_block;
  int prob_bits;
  bool checksum;
  scan::State* state;
  uint64_t* entries;  // look-back entries, one per ticket
  gpu::DeviceResult* results;
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

__device__ inline void write_header(uint8_t* dst, DType t, uint64_t count, uint8_t flags, int lb, int pb,
                                    uint64_t raw_bytes) {
  const int l = lanes::lane();
  uint32_t w = 0;
  switch (l) {
    case 0: w = 0x315A504Du; break;  // "MPZ1"
    case 1: w = format::kVersion | (uint32_t{static_cast<uint8_t>(t)} << 8) | (uint32_t{flags} << 16) |
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

template <DType T, bool kFused, bool kAligned, int kVariant>
struct BlockEncoder {
  using C = split::Chunk<T>;
  static constexpr int kLoadBatch = kVariant == kNarrow ? MPIZIP_ENC_NARROW_BATCH : kBatch;
  static constexpr int kFullLoadBatch = kVariant == kNarrow ? MPIZIP_ENC_NARROW_FULL_BATCH
                                        : kVariant == kMid  ? (T == DType::kE5m2 ? 2 : MPIZIP_ENC_MID_FULL_BATCH)
                                                            : kFullBatch;
  static constexpr int kEb = static_cast<int>(format::elem_bytes(T));

  const Params& p;
  uint8_t* buf;      // symbols, then words
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
    bytes::st_n<true>(buf + c * C::kSyms, C::kSyms, s);
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
        bytes::st_n<true>(sym_at + d * C::kSyms, C::kSyms, s);
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

  // Phase 1: symbols of plane `plane` for symbols [k B, k B + n) to buf; raw bits and checksum terms
  // too when this is plane 0 of the fused kernel.
  __device__ __forceinline__ uint64_t split(const Item& it, int plane, uint64_t k, uint32_t n, bool write_raw, bool sum) {
    const int lane = lanes::lane();
    for (int i = lane; i < 256 / 4 + 256 / 16; i += lanes::kLanes) {
      if (i < 64) reinterpret_cast<uint4*>(counts)[i] = make_uint4(0, 0, 0, 0);
      else reinterpret_cast<uint4*>(flags)[i - 64] = make_uint4(0, 0, 0, 0);
    }
    lanes::sync();
    const uint64_t nbytes = it.count * kEb;
    const uint64_t chunk0 = (k << p.log2_block) / C::kSyms;
    const uint32_t nch = (n + C::kSyms - 1) / C::kSyms;
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
    // The preprocessor, not `if constexpr`: kEntry8 is no template parameter, so both branches
    // would be checked, and a uint4 does not convert to a uint2 (hipcc rejects it).
#if MPIZIP_ENC_ENTRY8
    (void)m;
    (void)xmax;
    return make_uint2(mp, kk | (c << 5) | (f << 16));
#else
    return make_uint4(mp, xmax > 0xFFFFFFFFull ? 0xFFFFFFFFu : static_cast<uint32_t>(xmax), m - f, (c << 5) | kk);
#endif
  }

  // Phase 2: the table, from presence flags and sampled counts.
  __device__ __forceinline__ ans::Table build_table() {
    const int lane = lanes::lane();
    uint32_t cnt[ans::kSymsPerLane];
    bool present[ans::kSymsPerLane];
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      cnt[j] = counts[lane + 32 * j];
      present[j] = flags[lane + 32 * j] != 0;
    }
    lanes::sync();  // counts alias the table
    ans::Table t;
    ans::normalize(cnt, present, p.prob_bits, t);
    t.cumulate();
    const uint32_t m = 1u << p.prob_bits;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      const uint32_t f = t.f[j];
      if (f) {
        // floor(x / f) = (x + umulhi(x, m')) >> k with m' = ceil(2^(32+k) / f) - 2^32, k = ceil(log2 f):
        // exact for every x < f << (32 - PB) (the encoder's state after renormalisation).
        const uint32_t kk = f == 1 ? 0 : 32 - __clz(f - 1);
        // In double: the quotient's rounding error (< 2^-19) is below its distance to the next
        // integer (>= 1/f) unless it is one, so the ceiling is exact.
        const double q = ceil(static_cast<double>(uint64_t{1} << (32 + kk)) / f);
        const uint32_t mp = static_cast<uint32_t>(static_cast<uint64_t>(q) - (uint64_t{1} << 32));
        const uint64_t xmax = uint64_t{f} << (32 - p.prob_bits);
        table[lane + 32 * j] = entry(mp, f, t.c[j], kk, m, xmax);
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

  // Phase 3: rANS over buf[0, n), groups last to first; leaves in pos the byte offset in buf of the
  // first word (words end at words_top) and the lane's final state in x. False (the block unfinished)
  // when the words would reach symbols not yet read.
  __device__ __forceinline__ bool encode(uint32_t n, uint32_t& x, uint32_t& pos) {
    const uint32_t top = words_top(p.log2_block, p.prob_bits);
    pos = top;
    x = format::kAnsLow;
    const int g_last = static_cast<int>((n + 31) / 32) - 1;
    const uint32_t lt = lanes::mask_lt();
    const uint32_t sh = 32 - p.prob_bits, m = 1u << p.prob_bits;
    auto step = [&](const auto& e, bool active) {
      uint32_t z, w;
      bool emit;
      if constexpr (kEntry8) {
        // x >= f << (32 - PB), as x > (f << (32 - PB)) - 1: right for f = M too (never).
        const uint32_t f = e.y >> 16;
        emit = active && x > (f << sh) - 1;
        z = m - f, w = e.y & 0xFFFF;
      } else {
        emit = active && x >= e.y;
        z = e.z, w = e.w;
      }
      const uint32_t b = lanes::ballot(emit);
      pos -= 2 * lanes::popc(b);
      if (emit) *reinterpret_cast<uint16_t*>(buf + pos + 2 * lanes::popc(b & lt)) = static_cast<uint16_t>(x);
      x = emit ? x >> 16 : x;
      if (active) {
        const uint32_t q = __funnelshift_r(x + __umulhi(x, e.x), 0, w);
        x += q * z + (w >> 5);
      }
    };
    const int lane = lanes::lane();
    const bool last_active = g_last * 32 + lane < static_cast<int>(n);
    step(table[last_active ? buf[g_last * 32 + lane] : 0], last_active);
    // Symbols and table entries are loaded four groups ahead of their use. Before each read the
    // words must leave the symbols intact and room for the words about to be written (pos is the
    // same in every lane): batch g reads groups g-4..g-7, below 32 (g - 3), and writes at most 256
    // bytes; the tail reads group g, below 32 (g + 1), and writes at most 64.
    int g = g_last - 1;
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
      for (int u = 0; u < 4; ++u) step(e[u], true);
    }
    for (; ok && g >= 0; --g) {
      if (pos < 32u * static_cast<uint32_t>(g + 3)) ok = false;
      else step(table[buf[g * 32 + lane]], true);
    }
    lanes::sync();
    return ok;
  }

  // Phase 5: the block at dst (its final place): bitmap, frequencies, states, words, padding.
  __device__ __forceinline__ void write(uint8_t* dst, const ans::Table& t, uint32_t x, uint32_t pos, uint32_t hb, uint32_t size) {
    const int lane = lanes::lane();
    const uint32_t top = words_top(p.log2_block, p.prob_bits), nw = (top - pos) / 2;
    uint32_t bmw = 0;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) bmw = lane == j ? t.bm[j] : bmw;
    if (lane < 8) bytes::st32<kAligned>(dst + 4 * lane, bmw);
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j)
      if (t.f[j]) bytes::st16<kAligned>(dst + 32 + 2 * t.rank(j), t.f[j]);
    if (lane == 0 && (t.nsym & 1)) bytes::st16<kAligned>(dst + 32 + 2 * t.nsym, 0);
    bytes::st32<kAligned>(dst + hb - 128 + 4 * lane, x);
    for (uint32_t w = lane; w < nw; w += lanes::kLanes)
      bytes::st16<kAligned>(dst + hb + 2 * w, *reinterpret_cast<const uint16_t*>(buf + pos + 2 * w));
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
template <DType T, bool kFused, bool kAligned, int kVariant>
__device__ void run(const Params& p, uint8_t* smem) {
  constexpr int kEb = static_cast<int>(format::elem_bytes(T));
  const int lane = lanes::lane();
  const uint32_t epoch = scan::launch_epoch(p.state);
  const uint32_t top = words_top(p.log2_block, p.prob_bits);
  uint8_t* gs = smem + lanes::group() * group_smem_bytes(p.log2_block, p.prob_bits);
  const uint32_t bsz = 1u << p.log2_block;
  BlockEncoder<T, kFused, kAligned, kVariant> enc{p, gs, reinterpret_cast<Entry*>(gs + top), gs + top + kFlagsAt,
                                                 reinterpret_cast<uint32_t*>(gs + top)};
#if MPIZIP_ENC_PROF
  long long prof_t_ = clock64();
#endif
  for (;;) {
    const uint32_t t = scan::take_ticket(p.state);
    if (t >= p.first[p.n]) break;
    MPIZIP_PROF_MARK(0);
    int i = 0;
    while (t >= p.first[i + 1]) ++i;
    const Item it = p.item[i];  // by value: kept in registers, not reloaded from the parameters
    const uint32_t j = t - p.first[i];
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
    const uint64_t nblocks = format::planes(T) * nbpp;
    const int plane = static_cast<int>(j / nbpp);
    const uint64_t k = j % nbpp;
    const uint32_t n = static_cast<uint32_t>(min(uint64_t{bsz}, nsym - (k << p.log2_block)));
    const uint64_t co = format::coded_offset(T, it.count);
    const uint64_t data_off = co + format::block_data_offset(T, it.count, p.log2_block);
    const bool room = data_off <= it.cap;

    const uint64_t h = enc.split(it, plane, k, n, kFused && plane == 0 && room, p.checksum && plane == 0);
    if (p.checksum && plane == 0) {
      const uint64_t hs = lanes::sum(h);
      if (lane == 0) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[i]), hs);
    }
    MPIZIP_PROF_MARK(1);
    ans::Table tab = enc.build_table();
    MPIZIP_PROF_MARK(2);
    uint32_t x, pos;
    if (!enc.encode(n, x, pos)) {
      // Words past the slack: the symbols again, and the flat table, whose words always fit.
      enc.split(it, plane, k, n, false, false);
      tab = enc.build_flat();
      if (!enc.encode(n, x, pos)) {
        if (lane == 0) scan::record_error(p.state, i, static_cast<int32_t>(Status::kInternal));
        pos = top;
      }
    }
    const uint32_t hb = static_cast<uint32_t>(format::align_up(32 + 2 * tab.nsym, 4)) + 128;
    const uint32_t size = static_cast<uint32_t>(format::align_up(hb + (top - pos)));
    MPIZIP_PROF_MARK(3);

    if (lane == 0) scan::publish(p.entries, t, epoch, scan::kFlagAggregate, size);
    const uint64_t off = scan::look_back(p.entries, p.first[i], t, epoch);
    if (lane == 0) scan::publish(p.entries, t, epoch, scan::kFlagInclusive, off + size);
    MPIZIP_PROF_MARK(4);

    if (!room || data_off + off + size > it.cap) {
      if (lane == 0) scan::record_error(p.state, i, static_cast<int32_t>(Status::kTruncated));
      continue;
    }
    enc.write(it.dst + data_off + off, tab, x, pos, hb, size);
    uint8_t* coded = it.dst + co;
    if (lane == 0) bytes::st64<kAligned>(coded + 16 + 8 * j, off + size);
    if (j == 0) {
      if (kFused) {
        write_header(it.dst, T, it.count, p.checksum ? format::kFlagChecksum : 0, p.log2_block, p.prob_bits,
                     format::raw_bytes(T, it.count));
        split::zero_raw_padding<T>(it.dst, it.count, lane);
      }
      const uint64_t tbl_end = 16 + 8 * nblocks, pad_end = data_off - co;
      if (tbl_end + lane < pad_end) coded[tbl_end + lane] = 0;
      if (lane == 0) bytes::st64<kAligned>(coded + 8, 0);
    }
    if (j == nblocks - 1 && lane == 0) {
      const uint64_t coded_bytes = data_off - co + off + size;
      bytes::st64<kAligned>(coded, coded_bytes);
      p.results[i].size = co + coded_bytes;
    }
    MPIZIP_PROF_MARK(5);
#if MPIZIP_ENC_PROF
    if (lane == 0) atomicAdd(&g_prof[6], 1ull);
#endif
  }
  if (!scan::finish(p.state)) return;
  // The last group: every other group's writes are visible. Checksums and statuses go out.
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
