// The GPU codec's fast mode (docs/FORMAT.md, "Fast streams"): one pass over the input, one CTA of
// 256 threads per chunk of 4096 symbols at a time, 16 consecutive symbols a thread, and the next
// chunk's bytes already on their way into shared memory while the current one is staged and
// written out (v19; v20 takes that chunk's ticket only after the current chunk's look-back).
//
// Encoder, per chunk: the thread's 16-byte input pieces, copied into shared memory by cp.async
// during the previous chunk (the first chunk and unaligned or partial pieces: plain loads), split in
// registers (kernels/split.cuh) with the raw bits stored straight to the raw section; a histogram of
// each plane's symbols in shared memory (16 copies of 16-bit counts, copy L % 16 for lane L), summed
// two threads a word. One warp per plane ranks the chunk's distinct symbols (up to 32 of them: each
// lane one symbol, its rank counted over the warp with shuffles; more: 15 rounds of a warp-wide max),
// picks the code width (2, 4 or 8 bits) that makes the chunk smallest and turns the ranks into that
// width's code table; meanwhile the other warps clear the histogram for the next chunk. The last
// warp, which did no selection, then places the chunk with the decoupled look-back of
// kernels/scan_state.cuh while the others code their symbols into a staging copy of the chunk in
// shared memory (code loops specialised per width): the codes with one store a thread, the escaped
// symbols at the offsets of a block-wide scan of their counts. The staged chunk leaves with 16-byte
// stores. Five barriers a chunk.
//
// Decoder, per chunk: its bounds from the block table (checked; read one chunk ahead), the chunk
// copied into one of two shared-memory buffers by cp.async during the previous chunk, the raw bits
// loaded before the chunk's first barrier; each thread's codes read with one load, the escapes found
// with word-wide masks and a block-wide scan, the chunk's size checked against its width and escape
// count, then the symbols looked up four at a time with byte permutes, merged with the raw bits and
// stored 16 bytes at a time. Every read is bounded by the stream and every write by the destination;
// a failed check marks the buffer corrupt.
//
// The bytes are those of the CPU codec's fast mode (kernels/fast_cpu.cc), which tests compare.
#pragma once

#include <cstdint>

#include "kernels/bytes.cuh"
#include "kernels/codec_gpu.h"
#include "kernels/format.h"
#include "kernels/lanes.cuh"
#include "kernels/scan_state.cuh"
#include "kernels/split.cuh"

namespace mpizip::kernels::fast {

using format::DType;

inline constexpr int kThreads = 256;
inline constexpr int kGroups = kThreads / lanes::kLanes;
inline constexpr int kSymsPerThread = 16;
static_assert(kThreads * kSymsPerThread == format::kFastChunkSymbols, "a CTA codes one chunk");
// A staged chunk of the encoder (which never picks a width that makes it larger than width 8's).
inline constexpr uint32_t kEncChunkBytes = format::fast_chunk_bytes(format::kFastChunkSymbols, 8, 0);

#if defined(__HIPCC__) || defined(MPIZIP_HIP)
inline constexpr bool kAsyncCopy = false;
#else
inline constexpr bool kAsyncCopy = true;
#endif

struct EncParams {
  const uint8_t* src;
  uint64_t count;
  uint8_t* dst;
  uint64_t cap;
  scan::State* state;
  uint64_t* entries;
  gpu::DeviceResult* result;
  int checksum;
};

struct DecParams {
  const uint8_t* src;
  uint64_t src_bytes;
  uint8_t* dst;
  uint64_t cap;
  scan::State* state;
  gpu::DeviceResult* result;
};

template <DType T>
struct Shape {
  using S = split::Chunk<T>;
  static constexpr int kPlanes = S::kPlanes;
  // 16-byte input chunks of kernels/split.cuh per thread.
  static constexpr int kSplits = kSymsPerThread / S::kSyms;
};

__device__ __forceinline__ uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

__device__ __forceinline__ uint32_t group_max(uint32_t v) {
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  return lanes::max(v);
#else
  return __reduce_max_sync(0xffffffffu, v);
#endif
}
// Bytewise minimum.
__device__ __forceinline__ uint32_t vmin4(uint32_t a, uint32_t b) {
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  uint32_t r = 0;
  for (int i = 0; i < 32; i += 8) r |= min((a >> i) & 0xFFu, (b >> i) & 0xFFu) << i;
  return r;
#else
  return __vminu4(a, b);
#endif
}
__device__ __forceinline__ uint32_t group_add(uint32_t v) {
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  return lanes::sum(v);
#else
  return __reduce_add_sync(0xffffffffu, v);
#endif
}

// 16 bytes from global to shared memory without passing through registers (cp.async; both
// addresses 16-byte aligned). Visible to the copying thread after async_wait(), to the others after
// that and a barrier.
__device__ __forceinline__ void async16(void* smem, const void* gmem) {
#if defined(__HIPCC__) || defined(MPIZIP_HIP)
  *reinterpret_cast<uint4*>(smem) = *reinterpret_cast<const uint4*>(gmem);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(smem))),
               "l"(gmem)
               : "memory");
#endif
}
__device__ __forceinline__ void async_wait() {
#if !(defined(__HIPCC__) || defined(MPIZIP_HIP))
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Checksum terms (docs/FORMAT.md, "Checksum") of the 16 bytes of input chunk c, bytes past nbytes
// not counted.
__device__ __forceinline__ uint64_t checksum16(const uint32_t (&w)[4], uint64_t c, uint64_t nbytes) {
  uint64_t h = 0;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint64_t at = 16 * c + 4 * q;
    if (at >= nbytes) break;
    uint32_t v = w[q];
    if (at + 4 > nbytes) v &= (1u << (8 * (nbytes - at))) - 1;
    h += format::mix64(((at / 4) << 32) | v);
  }
  return h;
}

// Exclusive block-wide prefix sum of v (all threads); *total gets the sum. `part` holds kGroups
// words of shared memory, which the caller must not write again before its next barrier after this
// one. One barrier.
__device__ __forceinline__ uint32_t block_scan(uint32_t v, uint32_t* part, uint32_t* total) {
  const uint32_t inc = lanes::scan(v);
  if (lanes::lane() == lanes::kLanes - 1) part[lanes::group()] = inc;
  __syncthreads();
  uint32_t before = 0, all = 0;
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    const uint32_t x = part[g];
    before += g < lanes::group() ? x : 0;
    all += x;
  }
  *total = all;
  return before + inc - v;
}

// Byte i (0..15) of 16 bytes held in four words.
__device__ __forceinline__ uint32_t byte_of(const uint32_t (&w)[4], int i) { return (w[i / 4] >> (8 * (i % 4))) & 0xFFu; }

// The 16 symbols of input chunk j of a thread, from / to split::Chunk's symbol words.
template <DType T>
__device__ __forceinline__ void gather(const uint32_t (&sym)[2][4], int j, uint32_t (&sw)[2][4]) {
  using S = split::Chunk<T>;
#pragma unroll
  for (int p = 0; p < S::kPlanes; ++p) {
    if constexpr (S::kSyms >= 4) {
#pragma unroll
      for (int q = 0; q < S::kSyms / 4; ++q) sw[p][j * (S::kSyms / 4) + q] = sym[p][q];
    } else {
      sw[p][j / 2] |= (sym[p][0] & 0xFFFFu) << (16 * (j % 2));
    }
  }
}
template <DType T>
__device__ __forceinline__ void scatter(const uint32_t (&sw)[2][4], int j, uint32_t (&sym)[2][4]) {
  using S = split::Chunk<T>;
#pragma unroll
  for (int p = 0; p < 2; ++p)
#pragma unroll
    for (int q = 0; q < 4; ++q) sym[p][q] = 0;
#pragma unroll
  for (int p = 0; p < S::kPlanes; ++p) {
    if constexpr (S::kSyms >= 4) {
#pragma unroll
      for (int q = 0; q < S::kSyms / 4; ++q) sym[p][q] = sw[p][j * (S::kSyms / 4) + q];
    } else {
      sym[p][0] = (sw[p][j / 2] >> (16 * (j % 2))) & 0xFFFFu;
    }
  }
}

// Escape masks of a thread's codes (words of width-W codes as the format lays them out, 32 / W codes
// a word): the escape code of symbol i sets bit W * (i % (32 / W)) of esc[i / (32 / W)]. Width 8
// has no escapes.
__device__ __forceinline__ uint32_t escapes2(uint32_t c) { return c & (c >> 1) & 0x55555555u; }
__device__ __forceinline__ uint32_t escapes4(uint32_t c) { return c & (c >> 1) & (c >> 2) & (c >> 3) & 0x11111111u; }
// The bits of symbols i < nv (0..16) in a word of width-W codes whose first symbol is `first`.
template <int W>
__device__ __forceinline__ uint32_t valid_bits(int nv, int first) {
  const int k = nv - first;  // symbols of this word to keep
  return k >= 32 / W ? 0xffffffffu : k <= 0 ? 0u : (1u << (W * k)) - 1;
}
// Is symbol i escaped, from the masks above.
template <int W>
__device__ __forceinline__ bool escaped(const uint32_t (&esc)[2], int i) {
  constexpr int per = 32 / W;
  return (esc[i / per] >> (W * (i % per))) & 1u;
}

// Encoder: the codes of one plane's 16 symbols of a thread at width W (2 or 4), from the plane's
// code table (select_plane), symbols i >= nv coded 0; their escape masks.
template <int W>
__device__ __forceinline__ void encode_codes(const uint32_t (&s)[4], const uint8_t* rank, int nv, uint32_t (&cw)[4],
                                             uint32_t (&esc)[2]) {
  constexpr int per = 32 / W;
  uint32_t c[2] = {0, 0};
#pragma unroll
  for (int i = 0; i < kSymsPerThread; ++i) {
    c[i / per] |= static_cast<uint32_t>(rank[byte_of(s, i)]) << (W * (i % per));
  }
  if (nv < kSymsPerThread) {
    c[0] &= valid_bits<W>(nv, 0);
    if (W == 4) c[1] &= valid_bits<W>(nv, per);
  }
  cw[0] = c[0];
  esc[0] = W == 2 ? escapes2(c[0]) : escapes4(c[0]);
  if (W == 4) {
    cw[1] = c[1];
    esc[1] = escapes4(c[1]);
  }
}

// The escaped symbols of a thread, in symbol order, to out[e...].
template <int W>
__device__ __forceinline__ void put_escapes(const uint32_t (&s)[4], const uint32_t (&esc)[2], uint8_t* out, uint32_t e) {
#pragma unroll
  for (int i = 0; i < kSymsPerThread; ++i)  // constant indices: the symbols stay in registers
    if (escaped<W>(esc, i)) out[e++] = static_cast<uint8_t>(byte_of(s, i));
}

// Decoder: symbols of a thread's 16 width-W codes (W 2 or 4) from the chunk's head (four words),
// escapes left 0 (the escape code selects a zero byte).
__device__ __forceinline__ void decode_codes2(uint32_t c, const uint32_t (&h)[4], uint32_t (&sw)[4]) {
  const uint32_t t = h[0] >> 8;  // table[0..2], then a zero byte for the escape code 3
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    // Eight 2-bit codes to eight nibbles: a byte-permute selector per four symbols.
    uint32_t x = (c >> (16 * half)) & 0xFFFFu;
    x = (x | (x << 8)) & 0x00FF00FFu;
    x = (x | (x << 4)) & 0x0F0F0F0Fu;
    x = (x | (x << 2)) & 0x33333333u;
    sw[2 * half] = __byte_perm(t, 0, x & 0xFFFFu);
    sw[2 * half + 1] = __byte_perm(t, 0, x >> 16);
  }
}
__device__ __forceinline__ void decode_codes4(const uint32_t (&c)[4], const uint32_t (&h)[4], uint32_t (&sw)[4]) {
  // table[0..7] in (a, b), table[8..14] and a zero byte for the escape code 15 in (d, e).
  const uint32_t a = __funnelshift_r(h[0], h[1], 8), b = __funnelshift_r(h[1], h[2], 8);
  const uint32_t d = __funnelshift_r(h[2], h[3], 8), e = h[3] >> 8;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint32_t g = (c[q / 2] >> (16 * (q % 2))) & 0xFFFFu;  // four 4-bit codes
    const uint32_t lo = __byte_perm(a, b, g & 0x7777u), hi = __byte_perm(d, e, g & 0x7777u);
    // Bit 3 of each code to a byte mask.
    uint32_t m = g & 0x8888u;
    m = (m | (m << 8)) & 0x00880088u;
    m = (m | (m << 4)) & 0x08080808u;
    m = (m >> 3) * 0xFFu;
    sw[q] = (lo & ~m) | (hi & m);
  }
}

// The histogram of a plane: 16 copies, copy L % 16 for lane L, 16-bit counts two to a word (a copy
// sees at most 2 x kGroups x 16 = 256 symbols), word q of copy c at [q][c]. Two lanes of an atomic
// meet only where lanes L and L + 16 hit one word (a single shared histogram serialises whole
// warps: uniform data puts half the lanes on one bin), and the sum reads 8 words a bin, not 32.
template <DType T>
struct EncSmem {
  static constexpr int P = Shape<T>::kPlanes, K = Shape<T>::kSplits;
  // The next chunk's input copied ahead (not fp64: 32 KiB of input a chunk).
  static constexpr bool kPrefetch = kAsyncCopy && K <= 4;
  uint32_t hist[P][128][16];
  uint4 in[kPrefetch ? K : 1][kPrefetch ? kThreads : 1];  // piece j of thread t at [j][t]
  uint4 out[P][kEncChunkBytes / 16];                       // the staged chunk of each plane
  alignas(16) uint32_t cnt[P][256];
  uint32_t list[P][lanes::kLanes];
  alignas(4) uint8_t rank[P][256];  // a symbol's code: its place among the most frequent, at most the escape
  uint32_t width[P], bytes[P];
  uint32_t part[kGroups];
  uint32_t next[2];
  int last;
  uint64_t base;
};

// A chunk's look-back entry (kernels/scan_state.cuh), without scan::publish's fence: what other
// CTAs read of a chunk before the launch completes is this word alone, never bytes written before
// it (the completion has its own fence), and both of a chunk's entries come from one thread, in
// order. The fence waited for that thread's raw and chunk stores still on their way.
__device__ __forceinline__ void publish_entry(uint64_t* entries, uint64_t idx, uint32_t epoch, uint64_t flag,
                                              uint64_t bytes) {
  *reinterpret_cast<volatile uint64_t*>(&entries[idx]) = (uint64_t{epoch} << 42) | (flag << 40) | (bytes >> 4);
}

// The input pieces of chunk k of a thread into shared memory (whole, aligned pieces only).
template <DType T>
__device__ __forceinline__ void prefetch_input(const EncParams& p, EncSmem<T>& sm, uint64_t nbytes, uint32_t k) {
  constexpr int K = Shape<T>::kSplits;
  const uint64_t c0 = uint64_t{k} * (kThreads * K) + threadIdx.x * K;
#pragma unroll
  for (int j = 0; j < K; ++j)
    if (16 * (c0 + j) + 16 <= nbytes) async16(&sm.in[j][threadIdx.x], p.src + 16 * (c0 + j));
}

// The most frequent symbols of plane pl (count descending, symbol ascending), by one warp: the
// width, the chunk's head and size, and sm.rank turned into the code table of width 2 or 4 (a
// symbol's rank, every other symbol the escape code).
template <DType T>
__device__ __forceinline__ void select_plane(EncSmem<T>& sm, int pl, uint32_t n) {
  const int lane = lanes::lane();
  uint32_t key[8];
  {
    const uint4* c4 = reinterpret_cast<const uint4*>(sm.cnt[pl]);
    const uint4 a = c4[2 * lane], b = c4[2 * lane + 1];
    const uint32_t c[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t s = 8 * lane + i;
      key[i] = c[i] ? (c[i] << 8) | (255 - s) : 0;  // unique among the nonzero counts
    }
  }
  uint32_t bal[8], nz = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    bal[i] = lanes::ballot(key[i] != 0);
    nz += lanes::popc(bal[i]);
  }
  uint32_t top3 = 0, top15 = 0, sym = 0, rk = 32;  // this lane's symbol and its rank (32: none)
  if (nz <= lanes::kLanes) {
    // Each distinct symbol to one lane; its rank is the number of larger keys.
    uint32_t at = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (key[i]) sm.list[pl][at + lanes::popc(bal[i] & lanes::mask_lt())] = key[i];
      at += lanes::popc(bal[i]);
    }
    lanes::sync();
    const uint32_t mine = static_cast<uint32_t>(lane) < nz ? sm.list[pl][lane] : 0;
    uint32_t r = 0;
#pragma unroll
    for (int j = 0; j < lanes::kLanes; ++j) r += lanes::shfl(mine, j) > mine ? 1u : 0u;
    top15 = group_add(mine && r < 15 ? mine >> 8 : 0);
    top3 = group_add(mine && r < 3 ? mine >> 8 : 0);
    if (mine && r < 15) {
      sym = 255 - (mine & 255);
      rk = r;
      sm.rank[pl][sym] = static_cast<uint8_t>(r);
    }
  } else {
    // Many distinct symbols: 15 rounds of a warp-wide max; lane r gets the symbol of rank r.
    for (int r = 0; r < 15; ++r) {
      uint32_t m = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) m = key[i] > m ? key[i] : m;
      const uint32_t wm = group_max(m);
      if (wm == 0) break;
#pragma unroll
      for (int i = 0; i < 8; ++i) key[i] = key[i] == wm ? 0 : key[i];
      const uint32_t s = 255 - (wm & 255), c = wm >> 8;
      if (lane == r) sym = s, rk = r;
      if (lane == 0) sm.rank[pl][s] = static_cast<uint8_t>(r);
      top15 += c;
      top3 += r < 3 ? c : 0;
    }
  }
  const int w = format::fast_choose_width(n, top3, top15);
  const uint32_t nesc = w == 8 ? 0 : n - (w == 2 ? top3 : top15);
  auto* head = reinterpret_cast<uint8_t*>(sm.out[pl]);
  if (lane < 16) head[lane] = lane == 0 ? static_cast<uint8_t>(w) : 0;
  lanes::sync();
  if (w < 8 && rk < format::fast_escape(w)) head[1 + rk] = static_cast<uint8_t>(sym);
  if (w < 8) {  // ranks to codes: at most the escape code, four bytes at a time
    const uint32_t e4 = format::fast_escape(w) * 0x01010101u;
    auto* r4 = reinterpret_cast<uint32_t*>(sm.rank[pl]);
#pragma unroll
    for (int i = 0; i < 2; ++i) r4[lane + 32 * i] = vmin4(r4[lane + 32 * i], e4);
  }
  if (lane == 0) {
    sm.width[pl] = w;
    sm.bytes[pl] = static_cast<uint32_t>(format::fast_chunk_bytes(n, w, nesc));
  }
}

template <DType T, bool kAligned>
__device__ void encode(const EncParams& p, EncSmem<T>& sm) {
  using S = split::Chunk<T>;
  constexpr int P = Shape<T>::kPlanes, K = Shape<T>::kSplits;
  constexpr bool kPre = EncSmem<T>::kPrefetch && kAligned;
  const int tid = threadIdx.x, lane = lanes::lane(), grp = lanes::group();
  const uint64_t nbytes = p.count * format::elem_bytes(T);
  const uint64_t nsym = format::symbols_per_plane(T, p.count);
  const uint64_t nck = (nsym + format::kFastChunkSymbols - 1) >> format::kFastLog2Chunk;
  const uint64_t co = format::coded_offset(T, p.count);
  const uint64_t data_off = co + format::block_data_offset(T, p.count, format::kFastLog2Chunk);
  const bool room = p.cap >= data_off;
  const uint32_t epoch = scan::launch_epoch(p.state);
  uint64_t csum = 0;

  if (blockIdx.x == 0) {
    if (!room) {
      if (tid == 0) scan::record_error(p.state, 0, static_cast<int32_t>(Status::kTruncated));
    } else {
      if (tid < 8) {
        const uint64_t raw = format::raw_bytes(T, p.count);
        const uint32_t flags = format::kFlagFast | (p.checksum ? format::kFlagChecksum : 0);
        const uint32_t w[8] = {0x315A504Du,
                               format::kVersionFast | (uint32_t{static_cast<uint8_t>(T)} << 8) | (flags << 16) |
                                   (uint32_t{format::kFastLog2Chunk} << 24),
                               static_cast<uint32_t>(p.count), static_cast<uint32_t>(p.count >> 32),
                               static_cast<uint32_t>(raw), static_cast<uint32_t>(raw >> 32),
                               uint32_t{P} << 8, 0};
        uint32_t mine = w[0];
#pragma unroll
        for (int i = 1; i < 8; ++i) mine = tid == i ? w[i] : mine;
        bytes::st32<kAligned>(p.dst + 4 * tid, mine);
      }
      if (tid < lanes::kLanes) split::zero_raw_padding<T>(p.dst, p.count, tid);
      const uint64_t table_end = co + format::kCodedHeaderBytes + 8 * nck * P;
      if (table_end + tid < format::align_up(table_end)) p.dst[table_end + tid] = 0;
    }
  }

  // The first ticket; each later one is taken by the placing warp once the current chunk's
  // look-back is done (never before a wait of this CTA: a ticket drawn a whole chunk ahead was held
  // through that chunk's look-back, so one CTA's wait delayed every later chunk's, and the waits
  // added up over a long run), read after barrier (4). sm.next alternates between two words.
  if (tid == 0) sm.next[0] = atomicAdd(&p.state->ticket, 1u);
  for (int i = tid; i < static_cast<int>(sizeof(sm.hist) / 16); i += kThreads)
    reinterpret_cast<uint4*>(&sm.hist[0][0][0])[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  uint32_t k = sm.next[0];
  if (kPre && room && k < nck) prefetch_input<T>(p, sm, nbytes, k);

  for (uint32_t it = 1;; it ^= 1) {
    if (k >= nck || !room) break;
    const uint32_t n = static_cast<uint32_t>(min64(format::kFastChunkSymbols, nsym - uint64_t{k} * format::kFastChunkSymbols));
    const int nv = max(0, min(kSymsPerThread, static_cast<int>(n) - tid * kSymsPerThread));
    const uint64_t c0 = uint64_t{k} * (kThreads * K) + static_cast<uint64_t>(tid) * K;

    // Load (from the copy made ahead where there is one), split, raw bits out, symbols kept.
    if constexpr (kPre) async_wait();
    uint32_t sw[2][4] = {};
#pragma unroll
    for (int j = 0; j < K; ++j) {
      uint32_t in[4], sym[2][4] = {}, raw[2][2] = {};
      if (kPre && 16 * (c0 + j) + 16 <= nbytes) {
        const uint4 v = sm.in[kPre ? j : 0][kPre ? tid : 0];
        in[0] = v.x, in[1] = v.y, in[2] = v.z, in[3] = v.w;
      } else {
        split::load_input<kAligned>(p.src, nbytes, c0 + j, in);
      }
      if (p.checksum) csum += checksum16(in, c0 + j, nbytes);
      S::split(in, sym, raw);
      split::store_raw<T, kAligned>(p.dst, p.count, c0 + j, raw);
      gather<T>(sym, j, sw);
    }
#pragma unroll
    for (int pl = 0; pl < P; ++pl)
#pragma unroll
      for (int i = 0; i < kSymsPerThread; ++i)
        if (i < nv) {
          const uint32_t sym = byte_of(sw[pl], i);
          atomicAdd(&sm.hist[pl][sym >> 1][lane & 15], sym & 1 ? 0x10000u : 1u);
        }
    __syncthreads();  // (1) histogram complete

    // Counts: thread t sums word t/2 over copies 8(t%2)..+7 (rotated by t/4: no bank conflicts),
    // both 16-bit halves at once (at most 2048 each), then the two partial sums; bin t is half t%2
    // of word t/2.
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int q = tid >> 1, h = tid & 1;
      uint32_t v = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) v += sm.hist[pl][q][8 * h + ((i + (q >> 1)) & 7)];
      v += lanes::shfl_xor(v, 1);
      sm.cnt[pl][tid] = (v >> (16 * h)) & 0xFFFFu;
      sm.rank[pl][tid] = 255;
    }
    __syncthreads();  // (2) counts complete; the histogram free

    // One warp per plane selects; the other warps clear the histogram for the next chunk.
    if (grp < P) {
      select_plane<T>(sm, grp, n);
    } else {
      for (int i = tid - P * lanes::kLanes; i < static_cast<int>(sizeof(sm.hist) / 16); i += kThreads - P * lanes::kLanes)
        reinterpret_cast<uint4*>(&sm.hist[0][0][0])[i] = make_uint4(0, 0, 0, 0);
    }
    __syncthreads();  // (3) widths, ranks and heads complete
    uint32_t total = 0;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) total += sm.bytes[pl];

    // The last warp, which did no selection, places the chunk, then draws the next ticket; the
    // others code meanwhile.
    uint32_t ticket = 0;
    if (grp == kGroups - 1) {
      uint64_t base = 0;
      if (lane == 0) publish_entry(p.entries, k, epoch, k == 0 ? scan::kFlagInclusive : scan::kFlagAggregate, total);
      if (k != 0) {
        base = scan::look_back(p.entries, 0, k, epoch);
        if (lane == 0) publish_entry(p.entries, k, epoch, scan::kFlagInclusive, base + total);
      }
      if (lane == 0) {
        sm.base = base;
        ticket = atomicAdd(&p.state->ticket, 1u);
      }
    }

    // Codes of the thread's 16 symbols per plane, and its escapes.
    uint32_t cw[2][4] = {}, esc[2][2] = {}, nesc = 0;
    int width[2] = {8, 8};
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int w = sm.width[pl];
      width[pl] = w;
      if (w == 2) {
        encode_codes<2>(sw[pl], sm.rank[pl], nv, cw[pl], esc[pl]);
      } else if (w == 4) {
        encode_codes<4>(sw[pl], sm.rank[pl], nv, cw[pl], esc[pl]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) cw[pl][q] = sw[pl][q] & valid_bits<8>(nv, 4 * q);
      }
      nesc |= static_cast<uint32_t>(__popc(esc[pl][0]) + __popc(esc[pl][1])) << (16 * pl);
    }
    if (grp == kGroups - 1 && lane == 0) sm.next[it] = ticket;  // the atomic's wait behind the coding
    uint32_t all = 0;
    const uint32_t before = block_scan(nesc, sm.part, &all);  // (4) also the next ticket visible

    // The next chunk's input on its way (into this thread's own slots, already read) during the
    // staging and the write-out.
    const uint32_t k_next = sm.next[it];
    if (kPre && k_next < nck) prefetch_input<T>(p, sm, nbytes, k_next);
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int w = width[pl];
      const uint32_t n_codes = static_cast<uint32_t>(format::fast_codes_bytes(n, w));
      auto* out = reinterpret_cast<uint8_t*>(sm.out[pl]);
      const uint32_t at = 2 * w * tid;
      if (at < n_codes) {
        uint8_t* d = out + format::kFastHeadBytes + at;
        if (w == 2) *reinterpret_cast<uint32_t*>(d) = cw[pl][0];
        else if (w == 4) *reinterpret_cast<uint2*>(d) = make_uint2(cw[pl][0], cw[pl][1]);
        else *reinterpret_cast<uint4*>(d) = make_uint4(cw[pl][0], cw[pl][1], cw[pl][2], cw[pl][3]);
      }
      const uint32_t e = format::kFastHeadBytes + n_codes + ((before >> (16 * pl)) & 0xFFFFu);
      if (w == 2) put_escapes<2>(sw[pl], esc[pl], out, e);
      else if (w == 4) put_escapes<4>(sw[pl], esc[pl], out, e);
      const uint32_t used = format::kFastHeadBytes + n_codes + ((all >> (16 * pl)) & 0xFFFFu);
      if (tid < 16 && used + tid < sm.bytes[pl]) out[used + tid] = 0;
    }
    __syncthreads();  // (5) the staged chunk and its place complete

    // The staged chunk to the stream, and its block-table entries. Nothing of it is written again
    // before barrier (1) of the next chunk.
    const uint64_t at = data_off + sm.base;
    if (at + total > p.cap) {
      if (tid == 0) scan::record_error(p.state, 0, static_cast<int32_t>(Status::kTruncated));
    } else {
      uint64_t off = at;
#pragma unroll
      for (int pl = 0; pl < P; ++pl) {
        const uint32_t words = sm.bytes[pl] / 16;
        for (uint32_t i = tid; i < words; i += kThreads) {
          const uint4 v = sm.out[pl][i];
          const uint32_t w4[4] = {v.x, v.y, v.z, v.w};
          bytes::st128<kAligned>(p.dst + off + 16 * i, w4);
        }
        off += sm.bytes[pl];
      }
      if (tid < P) {
        const uint64_t end = sm.base + sm.bytes[0] + (tid == 1 ? sm.bytes[P - 1] : 0);
        bytes::st64<kAligned>(p.dst + co + format::kCodedHeaderBytes + 8 * (uint64_t{k} * P + tid), end);
      }
    }
    k = k_next;
  }
  if constexpr (kPre) async_wait();

  if (p.checksum) {
    const uint64_t s = lanes::sum(csum);
    if (lane == 0 && s) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[0]), static_cast<unsigned long long>(s));
  }
  __threadfence();  // every thread's: the look-back entries are stored without one (publish_entry)
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    sm.last = atomicAdd(&p.state->done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!sm.last || grp != 0) return;
  __threadfence();
  int32_t err = *reinterpret_cast<volatile int32_t*>(&p.state->err[0]);
  const uint64_t sum = *reinterpret_cast<volatile uint64_t*>(&p.state->checksum[0]);
  uint64_t data = 0;
  if (nck) {
    const uint64_t v = *reinterpret_cast<volatile uint64_t*>(&p.entries[nck - 1]);
    if ((v >> 42) != epoch || ((v >> 40) & 3) != scan::kFlagInclusive) err = err ? err : static_cast<int32_t>(Status::kDeviceError);
    data = (v & ((uint64_t{1} << 40) - 1)) << 4;
  }
  if (lane == 0) {
    const uint64_t coded_bytes = data_off - co + data;
    if (!err) {
      bytes::st64<kAligned>(p.dst + co, coded_bytes);
      bytes::st64<kAligned>(p.dst + co + 8, p.checksum ? sum : 0);
    }
    p.result->size = err ? 0 : co + coded_bytes;
    p.result->status = err;
  }
  scan::reset(p.state, 1, epoch);
}

template <DType T>
struct DecSmem {
  static constexpr int P = Shape<T>::kPlanes;
  uint4 in[2][P][format::kFastMaxChunkBytes / 16];  // two chunks: the current one and the next
  uint64_t start[2][P];
  uint32_t size[2][P];
  int ok[2][P];
  uint32_t hdr[8];
  uint32_t part[kGroups];
  int last;
};

template <DType T, bool kAligned>
__device__ void decode(const DecParams& p, DecSmem<T>& sm) {
  using S = split::Chunk<T>;
  constexpr int P = Shape<T>::kPlanes, K = Shape<T>::kSplits;
  constexpr bool kPre = kAsyncCopy && kAligned;
  // The raw bits loaded before the chunk's first barrier (not fp64: 24 registers of them).
  constexpr bool kEarlyRaw = P == 1;
  const auto corrupt = static_cast<int32_t>(Status::kCorruptStream);
  const int tid = threadIdx.x, lane = lanes::lane(), grp = lanes::group();
  if (tid < 8) sm.hdr[tid] = p.src_bytes >= format::kHeaderBytes ? bytes::ld32<kAligned>(p.src + 4 * tid) : 0;
  __syncthreads();
  const uint32_t* w = sm.hdr;
  const uint8_t version = w[1] & 0xFF, dtype = (w[1] >> 8) & 0xFF, flags = (w[1] >> 16) & 0xFF;
  const uint32_t lb = w[1] >> 24, pb = w[6] & 0xFF, planes = (w[6] >> 8) & 0xFF;
  const uint64_t count = w[2] | (uint64_t{w[3]} << 32), raw = w[4] | (uint64_t{w[5]} << 32);
  int32_t err = 0;
  uint64_t co = 0, coded_bytes = 0, table_bytes = 0, stored_sum = 0;
  uint64_t first_start = 0, first_end = 0;  // the first chunk's table entries, read early (tid < P)
  bool first_read = false;
  if (p.src_bytes < format::kHeaderBytes || w[0] != 0x315A504Du || !format::fast_version_flags_valid(version, flags) ||
      lb != format::kFastLog2Chunk || pb != 0 || (w[6] >> 16) != 0 || w[7] != 0 || !format::dtype_valid(dtype)) {
    err = corrupt;
  } else if (dtype != static_cast<uint8_t>(T)) {
    err = static_cast<int32_t>(Status::kTypeMismatch);
  } else if (count > (uint64_t{1} << 58) || planes != P || raw != format::raw_bytes(T, count)) {
    err = corrupt;
  } else {
    co = format::coded_offset(T, count);
    table_bytes = format::block_data_offset(T, count, format::kFastLog2Chunk);
    if (p.src_bytes < co + format::kCodedHeaderBytes) {
      err = corrupt;
    } else {
      coded_bytes = bytes::ld64<kAligned>(p.src + co);
      stored_sum = bytes::ld64<kAligned>(p.src + co + 8);
      // The CTA's first chunk's entries beside them (one round trip less at small sizes), where they
      // lie inside the stream; checked with the others below.
      const uint64_t idx = uint64_t{blockIdx.x} * P + tid, t0 = co + format::kCodedHeaderBytes;
      if (tid < P && t0 + 8 * (idx + 1) <= p.src_bytes) {
        first_end = bytes::ld64<kAligned>(p.src + t0 + 8 * idx);
        first_start = idx ? bytes::ld64<kAligned>(p.src + t0 + 8 * (idx - 1)) : 0;
        first_read = true;
      }
      if (coded_bytes > p.src_bytes - co || coded_bytes < table_bytes || (!(flags & format::kFlagChecksum) && stored_sum))
        err = corrupt;
      else if (count * format::elem_bytes(T) > p.cap)
        err = static_cast<int32_t>(Status::kTruncated);
    }
  }
  if (err && tid == 0) scan::record_error(p.state, 0, err);
  const uint64_t nbytes = count * format::elem_bytes(T);
  const uint64_t nsym = format::symbols_per_plane(T, count);
  const uint64_t nck = err ? 0 : (nsym + format::kFastChunkSymbols - 1) >> format::kFastLog2Chunk;
  const uint64_t data_bytes = coded_bytes - table_bytes;
  const uint8_t* table = p.src + co + format::kCodedHeaderBytes;
  const uint8_t* data = p.src + co + table_bytes;
  const uint64_t G = gridDim.x;
  uint64_t csum = 0;

  // Entry idx's bounds (from its table entries st, end) checked, by thread tid < P (its plane).
  const auto check = [&](uint64_t idx, uint64_t st, uint64_t end, uint64_t& start, uint32_t& size, int& ok) {
    ok = st <= end && end <= data_bytes && ((st | end) & 15) == 0 && end - st <= format::kFastMaxChunkBytes &&
         (idx + 1 < nck * P || end == data_bytes);
    start = st;
    size = static_cast<uint32_t>(end - st);
  };
  // Chunk kk's bounds, read and checked by thread tid < P (its plane).
  const auto bounds = [&](uint64_t kk, uint64_t& start, uint32_t& size, int& ok) {
    const uint64_t idx = kk * P + tid;
    const uint64_t end = bytes::ld64<kAligned>(table + 8 * idx), st = idx ? bytes::ld64<kAligned>(table + 8 * (idx - 1)) : 0;
    check(idx, st, end, start, size, ok);
  };
  // The chunk whose checked bounds are in slot bb into buffer bb (all threads).
  const auto fetch = [&](int bb) {
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const uint32_t words = sm.size[bb][pl] / 16;
      const uint8_t* s = data + sm.start[bb][pl];
      for (uint32_t i = tid; i < words; i += kThreads) {
        if constexpr (kPre) {
          async16(&sm.in[bb][pl][i], s + 16 * i);
        } else {
          uint32_t v[4];
          bytes::ld128<kAligned>(s + 16 * i, v);
          sm.in[bb][pl][i] = make_uint4(v[0], v[1], v[2], v[3]);
        }
      }
    }
  };

  // Chunk k's bounds to slot 0 and the chunk on its way; the bounds of chunk k + G in registers.
  uint64_t k = blockIdx.x;
  uint64_t nx_start = 0;
  uint32_t nx_size = 0;
  int nx_ok = 0, b = 0;
  if (k < nck) {
    if (tid < P) {
      if (first_read) check(k * P + tid, first_start, first_end, sm.start[0][tid], sm.size[0][tid], sm.ok[0][tid]);
      else bounds(k, sm.start[0][tid], sm.size[0][tid], sm.ok[0][tid]);
    }
    __syncthreads();
    bool ok = true;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) ok = ok && sm.ok[0][pl];
    if (ok) fetch(0);
    if (tid < P && k + G < nck) bounds(k + G, nx_start, nx_size, nx_ok);
  }

  for (; k < nck; k += G, b ^= 1) {
    const uint32_t n = static_cast<uint32_t>(min64(format::kFastChunkSymbols, nsym - k * format::kFastChunkSymbols));
    const int nv = max(0, min(kSymsPerThread, static_cast<int>(n) - tid * kSymsPerThread));
    const uint64_t c0 = k * (kThreads * K) + static_cast<uint64_t>(tid) * K;
    uint32_t rw[K][2][2] = {};
    if constexpr (kEarlyRaw) {
#pragma unroll
      for (int j = 0; j < K; ++j)
        if (16 * (c0 + j) < nbytes) split::load_raw<T, kAligned>(p.src, count, c0 + j, rw[j]);
    }
    if constexpr (kPre) async_wait();
    if (tid < P) {
      sm.start[b ^ 1][tid] = nx_start;
      sm.size[b ^ 1][tid] = nx_size;
      sm.ok[b ^ 1][tid] = nx_ok;
    }
    __syncthreads();  // chunk k in buffer b; chunk k + G's bounds in slot b ^ 1
    bool ok = true;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) ok = ok && sm.ok[b][pl];
    if (!ok) {
      if (tid == 0) scan::record_error(p.state, 0, corrupt);
      break;
    }
    uint32_t size[P];
#pragma unroll
    for (int pl = 0; pl < P; ++pl) size[pl] = sm.size[b][pl];
    // The next chunk on its way into the other buffer (last read before this barrier), and the
    // bounds of the one after it.
    if (k + G < nck) {
      bool ok_next = true;
#pragma unroll
      for (int pl = 0; pl < P; ++pl) ok_next = ok_next && sm.ok[b ^ 1][pl];
      if (ok_next) fetch(b ^ 1);
      if (tid < P && k + 2 * G < nck) bounds(k + 2 * G, nx_start, nx_size, nx_ok);
    }

    // Codes, escapes counted, the chunk's size checked.
    uint32_t cw[2][4] = {}, esc[2][2] = {}, nesc = 0;
    int width[2] = {8, 8};
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const auto* in = reinterpret_cast<const uint8_t*>(sm.in[b][pl]);
      const int wd = size[pl] >= format::kFastHeadBytes ? in[0] : 0;
      width[pl] = wd;
      if (wd != 2 && wd != 4 && wd != 8) {
        ok = false;
        continue;
      }
      const uint32_t n_codes = static_cast<uint32_t>(format::fast_codes_bytes(n, wd));
      if (format::kFastHeadBytes + n_codes > size[pl]) {
        ok = false;
        continue;
      }
      const uint32_t at = 2 * wd * tid;
      if (at < n_codes) {
        const uint8_t* s = in + format::kFastHeadBytes + at;
        if (wd == 2) cw[pl][0] = *reinterpret_cast<const uint32_t*>(s);
        else if (wd == 4) {
          const uint2 v = *reinterpret_cast<const uint2*>(s);
          cw[pl][0] = v.x, cw[pl][1] = v.y;
        } else {
          const uint4 v = *reinterpret_cast<const uint4*>(s);
          cw[pl][0] = v.x, cw[pl][1] = v.y, cw[pl][2] = v.z, cw[pl][3] = v.w;
        }
      }
      // Codes past the chunk's n symbols are ignored.
      if (wd == 2) {
        esc[pl][0] = escapes2(cw[pl][0]) & valid_bits<2>(nv, 0);
      } else if (wd == 4) {
        esc[pl][0] = escapes4(cw[pl][0]) & valid_bits<4>(nv, 0);
        esc[pl][1] = escapes4(cw[pl][1]) & valid_bits<4>(nv, 8);
      }
      nesc |= static_cast<uint32_t>(__popc(esc[pl][0]) + __popc(esc[pl][1])) << (16 * pl);
    }
    uint32_t all = 0;
    const uint32_t before = block_scan(nesc, sm.part, &all);
#pragma unroll
    for (int pl = 0; pl < P; ++pl)
      ok = ok && size[pl] == format::fast_chunk_bytes(n, width[pl], (all >> (16 * pl)) & 0xFFFFu);
    if (!ok) {  // the same in every thread: from the staged chunk and the scan's total
      if (tid == 0) scan::record_error(p.state, 0, corrupt);
      break;
    }

    // Symbols (table entries four at a time; escapes from the escape bytes), merged with the raw bits.
    uint32_t sw[2][4] = {};
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const auto* in = reinterpret_cast<const uint8_t*>(sm.in[b][pl]);
      const int wd = width[pl];
      if (wd == 8) {
#pragma unroll
        for (int q = 0; q < 4; ++q) sw[pl][q] = cw[pl][q];
        continue;
      }
      const uint4 hv = sm.in[b][pl][0];
      const uint32_t h[4] = {hv.x, hv.y, hv.z, hv.w};
      uint32_t e = format::kFastHeadBytes + static_cast<uint32_t>(format::fast_codes_bytes(n, wd)) +
                   ((before >> (16 * pl)) & 0xFFFFu);
      if (wd == 2) {
        decode_codes2(cw[pl][0], h, sw[pl]);
#pragma unroll
        for (int i = 0; i < kSymsPerThread; ++i)
          if (escaped<2>(esc[pl], i)) sw[pl][i / 4] |= uint32_t{in[e++]} << (8 * (i % 4));
      } else {
        decode_codes4(cw[pl], h, sw[pl]);
#pragma unroll
        for (int i = 0; i < kSymsPerThread; ++i)
          if (escaped<4>(esc[pl], i)) sw[pl][i / 4] |= uint32_t{in[e++]} << (8 * (i % 4));
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (16 * (c0 + j) >= nbytes) break;
      uint32_t sym[2][4], out[4];
      scatter<T>(sw, j, sym);
      if constexpr (!kEarlyRaw) split::load_raw<T, kAligned>(p.src, count, c0 + j, rw[j]);
      S::merge(sym, rw[j], out);
      split::store_output<kAligned>(p.dst, nbytes, c0 + j, out);
      if (flags & format::kFlagChecksum) csum += checksum16(out, c0 + j, nbytes);
    }
  }
  if constexpr (kPre) async_wait();

  if (flags & format::kFlagChecksum) {
    const uint64_t s = lanes::sum(csum);
    if (lane == 0 && s) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[0]), static_cast<unsigned long long>(s));
  }
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    sm.last = atomicAdd(&p.state->done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!sm.last || grp != 0) return;
  __threadfence();
  int32_t e = *reinterpret_cast<volatile int32_t*>(&p.state->err[0]);
  const uint64_t sum = *reinterpret_cast<volatile uint64_t*>(&p.state->checksum[0]);
  if (!e && (flags & format::kFlagChecksum) && sum != stored_sum) e = corrupt;
  if (lane == 0) {
    p.result->size = e ? 0 : count;
    p.result->status = e;
  }
  scan::reset(p.state, 1, scan::launch_epoch(p.state));
}

}  // namespace mpizip::kernels::fast
