// The GPU codec's fast mode (docs/FORMAT.md, "Fast streams"): one pass over the input, one CTA of
// 256 threads per chunk of 4096 symbols at a time, 16 consecutive symbols a thread.
//
// Encoder, per chunk: vector loads of the elements, split in registers (kernels/split.cuh) with the
// raw bits stored straight to the raw section; a histogram of each plane's symbols in shared memory
// (one copy per lane index, so that no two atomics of a warp meet, then summed); one group per plane picks the 15 most frequent symbols
// (15 rounds of a group-wide max over count:symbol keys) and the code width (2, 4 or 8 bits) that
// makes the chunk smallest. The chunk's size is then known, so group 0 places it with the decoupled
// look-back of kernels/scan_state.cuh while the other threads code their symbols into a staging
// copy of the chunk in shared memory: the codes with one store a thread, the escaped symbols at the
// offsets of a block-wide scan of their counts. The staged chunk leaves with 16-byte stores.
//
// Decoder, per chunk: its bounds from the block table (checked), the chunk copied into shared
// memory with 16-byte loads, each thread's codes read with one load, the escapes found with a
// block-wide scan, the chunk's size checked against its width and escape count, then symbols
// merged with the raw bits and stored 16 bytes at a time. Every read is bounded by the stream and
// every write by the destination; a failed check marks the buffer corrupt.
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
// words of shared memory. Two barriers.
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
  __syncthreads();
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

// The histogram of a plane: one copy per lane index, 8-bit counts four to a word (a copy sees at
// most kGroups x 16 = 128 symbols), word q of copy L at [q][L]. Lanes of one instruction always
// hit different words in different banks, whatever their symbols: no two atomics of a warp meet
// (a single shared histogram serialises them, and uniform data puts half the lanes on one bin).
template <int P>
struct EncSmem {
  uint32_t hist[P][64][lanes::kLanes];
  uint32_t cnt[P][256];
  uint4 out[P][kEncChunkBytes / 16];  // the staged chunk of each plane
  uint8_t rank[P][256];               // a symbol's place among the most frequent (255: not among them)
  uint32_t width[P], bytes[P];
  uint32_t part[kGroups];
  uint32_t ticket;
  int last;
  uint64_t base;
};

template <DType T, bool kAligned>
__device__ void encode(const EncParams& p, EncSmem<Shape<T>::kPlanes>& sm) {
  using S = split::Chunk<T>;
  constexpr int P = Shape<T>::kPlanes, K = Shape<T>::kSplits;
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

  for (;;) {
    if (tid == 0) sm.ticket = atomicAdd(&p.state->ticket, 1u);
    for (int i = tid; i < P * 64 * lanes::kLanes / 4; i += kThreads)
      reinterpret_cast<uint4*>(&sm.hist[0][0][0])[i] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    const uint32_t k = sm.ticket;
    if (k >= nck || !room) break;
    const uint32_t n = static_cast<uint32_t>(min64(format::kFastChunkSymbols, nsym - uint64_t{k} * format::kFastChunkSymbols));
    const int nv = max(0, min(kSymsPerThread, static_cast<int>(n) - tid * kSymsPerThread));
    const uint64_t c0 = uint64_t{k} * (kThreads * K) + static_cast<uint64_t>(tid) * K;

    // Load, split, raw bits out, symbols kept.
    uint32_t sw[2][4] = {};
#pragma unroll
    for (int j = 0; j < K; ++j) {
      uint32_t in[4], sym[2][4] = {}, raw[2][2] = {};
      split::load_input<kAligned>(p.src, nbytes, c0 + j, in);
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
          atomicAdd(&sm.hist[pl][sym >> 2][lane], 1u << (8 * (sym & 3)));
        }
    __syncthreads();
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      // Bin tid over the 32 copies, each thread starting at its own copy: no bank conflicts.
      uint32_t c = 0;
#pragma unroll 8
      for (int j = 0; j < lanes::kLanes; ++j) c += (sm.hist[pl][tid >> 2][(j + tid) & (lanes::kLanes - 1)] >> (8 * (tid & 3))) & 0xFFu;
      sm.cnt[pl][tid] = c;
      sm.rank[pl][tid] = 255;
    }
    __syncthreads();

    // The 15 most frequent symbols of each plane (count descending, symbol ascending) and the width.
    if (grp < P) {
      const int pl = grp;
      uint32_t key[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const uint32_t s = 8 * lane + i, c = sm.cnt[pl][s];
        key[i] = c ? (c << 8) | (255 - s) : 0;
      }
      uint32_t top3 = 0, top15 = 0, ntop = 0, mine = 0;
      for (int r = 0; r < 15; ++r) {
        uint32_t m = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i) m = key[i] > m ? key[i] : m;
        const uint32_t wm = group_max(m);
        if (wm == 0) break;
#pragma unroll
        for (int i = 0; i < 8; ++i) key[i] = key[i] == wm ? 0 : key[i];
        const uint32_t s = 255 - (wm & 255), c = wm >> 8;
        if (lane == r) mine = s;
        if (lane == 0) sm.rank[pl][s] = static_cast<uint8_t>(r);
        top15 += c;
        top3 += r < 3 ? c : 0;
        ntop = r + 1;
      }
      const int w = format::fast_choose_width(n, top3, top15);
      const uint32_t nesc = w == 8 ? 0 : n - (w == 2 ? top3 : top15);
      auto* head = reinterpret_cast<uint8_t*>(sm.out[pl]);
      const uint32_t prev = lanes::shfl(mine, lane ? lane - 1 : 0);
      if (lane < 16)
        head[lane] = lane == 0 ? static_cast<uint8_t>(w)
                               : (w < 8 && static_cast<uint32_t>(lane - 1) < min(ntop, format::fast_escape(w)))
                                     ? static_cast<uint8_t>(prev & 0xFF)
                                     : 0;
      if (lane == 0) {
        sm.width[pl] = w;
        sm.bytes[pl] = static_cast<uint32_t>(format::fast_chunk_bytes(n, w, nesc));
      }
    }
    __syncthreads();
    uint32_t total = 0;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) total += sm.bytes[pl];

    // Group 0 places the chunk; the others code meanwhile.
    if (grp == 0) {
      uint64_t base = 0;
      if (k == 0) {
        if (lane == 0) scan::publish(p.entries, 0, epoch, scan::kFlagInclusive, total);
      } else {
        if (lane == 0) scan::publish(p.entries, k, epoch, scan::kFlagAggregate, total);
        base = scan::look_back(p.entries, 0, k, epoch);
        if (lane == 0) scan::publish(p.entries, k, epoch, scan::kFlagInclusive, base + total);
      }
      if (lane == 0) sm.base = base;
    }

    // Codes of the thread's 16 symbols per plane, and its escapes.
    uint32_t cw[2][4] = {}, escmask[2] = {0, 0}, nesc = 0;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int w = sm.width[pl];
      const uint32_t esc = format::fast_escape(w);
#pragma unroll
      for (int i = 0; i < kSymsPerThread; ++i) {
        const uint32_t s = byte_of(sw[pl], i);
        uint32_t c = w == 8 ? s : min(static_cast<uint32_t>(sm.rank[pl][s]), esc);
        if (i >= nv) c = 0;
        if (w < 8 && i < nv && c == esc) escmask[pl] |= 1u << i;
        if (w == 2) cw[pl][0] |= c << (2 * i);
        else if (w == 4) cw[pl][i / 8] |= c << (4 * (i % 8));
        else cw[pl][i / 4] |= c << (8 * (i % 4));
      }
      nesc |= static_cast<uint32_t>(__popc(escmask[pl])) << (16 * pl);
    }
    uint32_t all = 0;
    const uint32_t before = block_scan(nesc, sm.part, &all);
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int w = sm.width[pl];
      const uint32_t n_codes = static_cast<uint32_t>(format::fast_codes_bytes(n, w));
      auto* out = reinterpret_cast<uint8_t*>(sm.out[pl]);
      const uint32_t at = 2 * w * tid;
      if (at < n_codes) {
        uint8_t* d = out + format::kFastHeadBytes + at;
        if (w == 2) *reinterpret_cast<uint32_t*>(d) = cw[pl][0];
        else if (w == 4) *reinterpret_cast<uint2*>(d) = make_uint2(cw[pl][0], cw[pl][1]);
        else *reinterpret_cast<uint4*>(d) = make_uint4(cw[pl][0], cw[pl][1], cw[pl][2], cw[pl][3]);
      }
      uint32_t e = format::kFastHeadBytes + n_codes + ((before >> (16 * pl)) & 0xFFFFu);
#pragma unroll
      for (int i = 0; i < kSymsPerThread; ++i)  // constant indices: the symbols stay in registers
        if ((escmask[pl] >> i) & 1) out[e++] = static_cast<uint8_t>(byte_of(sw[pl], i));
      const uint32_t used = format::kFastHeadBytes + n_codes + ((all >> (16 * pl)) & 0xFFFFu);
      if (tid < 16 && used + tid < sm.bytes[pl]) out[used + tid] = 0;
    }
    __syncthreads();

    // The staged chunk to the stream, and its block-table entries.
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
    __syncthreads();
  }

  if (p.checksum) {
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

template <int P>
struct DecSmem {
  uint4 in[P][format::kFastMaxChunkBytes / 16];  // the chunk of each plane
  uint32_t hdr[8];
  uint32_t part[kGroups];
  uint64_t start[P], size[P];
  int ok[P];
  int last;
};

template <DType T, bool kAligned>
__device__ void decode(const DecParams& p, DecSmem<Shape<T>::kPlanes>& sm) {
  using S = split::Chunk<T>;
  constexpr int P = Shape<T>::kPlanes, K = Shape<T>::kSplits;
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
  uint64_t csum = 0;

  for (uint64_t k = blockIdx.x; k < nck; k += gridDim.x) {
    const uint32_t n = static_cast<uint32_t>(min64(format::kFastChunkSymbols, nsym - k * format::kFastChunkSymbols));
    const int nv = max(0, min(kSymsPerThread, static_cast<int>(n) - tid * kSymsPerThread));
    if (tid < P) {
      const uint64_t idx = k * P + tid;
      const uint64_t end = bytes::ld64<kAligned>(table + 8 * idx), start = idx ? bytes::ld64<kAligned>(table + 8 * (idx - 1)) : 0;
      sm.ok[tid] = start <= end && end <= data_bytes && ((start | end) & 15) == 0 && end - start <= format::kFastMaxChunkBytes &&
                   (idx + 1 < nck * P || end == data_bytes);
      sm.start[tid] = start;
      sm.size[tid] = end - start;
    }
    __syncthreads();
    bool ok = true;
#pragma unroll
    for (int pl = 0; pl < P; ++pl) ok = ok && sm.ok[pl];
    if (!ok) {
      if (tid == 0) scan::record_error(p.state, 0, corrupt);
      break;
    }
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const uint32_t words = static_cast<uint32_t>(sm.size[pl] / 16);
      for (uint32_t i = tid; i < words; i += kThreads) {
        uint32_t v[4];
        bytes::ld128<kAligned>(data + sm.start[pl] + 16 * i, v);
        sm.in[pl][i] = make_uint4(v[0], v[1], v[2], v[3]);
      }
    }
    __syncthreads();

    // Codes, escapes counted, the chunk's size checked.
    uint32_t cw[2][4] = {}, escmask[2] = {0, 0}, nesc = 0;
    int width[2] = {8, 8};
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const auto* in = reinterpret_cast<const uint8_t*>(sm.in[pl]);
      const int wd = sm.size[pl] >= format::kFastHeadBytes ? in[0] : 0;
      width[pl] = wd;
      if (wd != 2 && wd != 4 && wd != 8) {
        ok = false;
        continue;
      }
      const uint32_t n_codes = static_cast<uint32_t>(format::fast_codes_bytes(n, wd));
      if (format::kFastHeadBytes + n_codes > sm.size[pl]) {
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
      if (wd < 8) {
        const uint32_t esc = format::fast_escape(wd);
#pragma unroll
        for (int i = 0; i < kSymsPerThread; ++i) {
          const uint32_t c = wd == 2 ? (cw[pl][0] >> (2 * i)) & 3 : (cw[pl][i / 8] >> (4 * (i % 8))) & 15;
          if (i < nv && c == esc) escmask[pl] |= 1u << i;
        }
      }
      nesc |= static_cast<uint32_t>(__popc(escmask[pl])) << (16 * pl);
    }
    uint32_t all = 0;
    const uint32_t before = block_scan(nesc, sm.part, &all);
#pragma unroll
    for (int pl = 0; pl < P; ++pl)
      ok = ok && sm.size[pl] == format::fast_chunk_bytes(n, width[pl], (all >> (16 * pl)) & 0xFFFFu);
    if (!ok) {  // the same in every thread: from the staged chunk and the scan's total
      if (tid == 0) scan::record_error(p.state, 0, corrupt);
      break;
    }

    // Symbols, merged with the raw bits.
    uint32_t sw[2][4] = {};
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const auto* in = reinterpret_cast<const uint8_t*>(sm.in[pl]);
      const int wd = width[pl];
      const uint32_t esc = format::fast_escape(wd);
      uint32_t e = format::kFastHeadBytes + static_cast<uint32_t>(format::fast_codes_bytes(n, wd)) +
                   ((before >> (16 * pl)) & 0xFFFFu);
#pragma unroll
      for (int i = 0; i < kSymsPerThread; ++i) {
        uint32_t s;
        if (wd == 8) {
          s = byte_of(cw[pl], i);
        } else {
          const uint32_t c = wd == 2 ? (cw[pl][0] >> (2 * i)) & 3 : (cw[pl][i / 8] >> (4 * (i % 8))) & 15;
          s = (escmask[pl] >> i) & 1 ? in[e++] : c == esc ? 0 : in[1 + c];
        }
        sw[pl][i / 4] |= s << (8 * (i % 4));
      }
    }
    const uint64_t c0 = k * (kThreads * K) + static_cast<uint64_t>(tid) * K;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (16 * (c0 + j) >= nbytes) break;
      uint32_t sym[2][4], rw[2][2], out[4];
      scatter<T>(sw, j, sym);
      split::load_raw<T, kAligned>(p.src, count, c0 + j, rw);
      S::merge(sym, rw, out);
      split::store_output<kAligned>(p.dst, nbytes, c0 + j, out);
      if (flags & format::kFlagChecksum) csum += checksum16(out, c0 + j, nbytes);
    }
    __syncthreads();
  }

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
