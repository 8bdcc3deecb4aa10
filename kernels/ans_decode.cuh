// The GPU decoder: one 32-lane group decodes one block (fp64: the two planes' blocks of the same
// elements, in lock step) and writes the elements straight into the destination. Symbols go
// through a 512-symbol window in shared memory, merged with the raw bits 16 bytes at a time; the
// renormalisation words stream through registers (a 128-word window, one ballot and two shuffles
// per group of 32 symbols). Every read is bounded by the block and the stream, every write by the
// destination; a failed check marks the buffer corrupt and nothing outside the buffers is touched.
#pragma once

#include <cstdint>

#include "kernels/ans_table.cuh"
#include "kernels/bytes.cuh"
#include "kernels/codec_gpu.h"
#include "kernels/format.h"
#include "kernels/lanes.cuh"
#include "kernels/scan_state.cuh"
#include "kernels/split.cuh"

namespace mpizip::kernels::decode {

using format::DType;

// Blocks with prob_bits up to kFastProbBits decode through a full slot table; larger ones (the
// format allows 15) through a binary search over the cumulative frequencies.
inline constexpr int kFastProbBits = 11;
inline constexpr uint32_t kTableBytes = 4u << kFastProbBits;
inline constexpr int kWinGroups = 16;
inline constexpr uint32_t kWinSyms = kWinGroups * lanes::kLanes;

struct Item {
  const uint8_t* src;
  uint64_t src_bytes;
  uint8_t* dst;
  uint64_t cap;
};

struct Params {
  Item item[scan::kMaxItems];
  int n;
  scan::State* state;
  gpu::DeviceResult* results;
};

template <DType T>
__host__ __device__ constexpr uint32_t group_smem_bytes() {
  return format::planes(T) * (kTableBytes + kWinSyms);
}

// The header's facts, checked (docs/FORMAT.md); err != 0 when the stream cannot be decoded.
// tbl[q]: where plane q's table is, from the stream's start, in a SHARED_TABLE stream (0: every
// block carries its own).
struct Stream {
  int32_t err;
  uint8_t flags;
  int lb, pb;
  uint64_t count, co, data_off, coded_bytes, checksum;
  uint64_t tbl[2];
};

template <DType T, bool kAligned>
__device__ Stream read_stream(const Item& it) {
  Stream s{};
  const auto corrupt = static_cast<int32_t>(Status::kCorruptStream);
  if (it.src_bytes < format::kHeaderBytes) {
    s.err = corrupt;
    return s;
  }
  const int lane = lanes::lane();
  const uint32_t mine = lane < 8 ? bytes::ld32<kAligned>(it.src + 4 * lane) : 0;
  uint32_t w[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) w[i] = lanes::shfl(mine, i);
  const uint32_t dtype = (w[1] >> 8) & 0xFF;
  s.flags = (w[1] >> 16) & 0xFF;
  s.lb = w[1] >> 24;
  s.count = w[2] | (uint64_t{w[3]} << 32);
  const uint64_t raw = w[4] | (uint64_t{w[5]} << 32);
  s.pb = w[6] & 0xFF;
  const bool stored = s.flags & format::kFlagStored;
  if (w[0] != 0x315A504Du || !format::version_flags_valid(w[1] & 0xFF, s.flags) || !format::dtype_valid(dtype) ||
      s.lb < format::kMinLog2Block ||
      s.lb > format::kMaxLog2Block || s.pb < format::kMinProbBits || s.pb > format::kMaxProbBits ||
      (w[6] >> 16) || w[7] || s.count > (uint64_t{1} << 58) ||
      ((w[6] >> 8) & 0xFF) != static_cast<uint32_t>(format::planes(static_cast<DType>(dtype))) ||
      raw != (stored ? 0 : format::raw_bytes(static_cast<DType>(dtype), s.count))) {
    s.err = corrupt;
    return s;
  }
  if (dtype != static_cast<uint32_t>(T)) {
    s.err = static_cast<int32_t>(Status::kTypeMismatch);
    return s;
  }
  const uint64_t nbytes = s.count * format::elem_bytes(T);
  if (stored) {
    if (it.src_bytes - format::kHeaderBytes < nbytes) s.err = corrupt;
    else if (nbytes > it.cap) s.err = static_cast<int32_t>(Status::kTruncated);
    return s;
  }
  s.co = format::coded_offset(T, s.count);
  s.data_off = s.co + format::block_data_offset(T, s.count, s.lb);
  if (it.src_bytes < s.co + format::kCodedHeaderBytes) {
    s.err = corrupt;
    return s;
  }
  const bool shared = s.flags & format::kFlagSharedTable;
  // Plane 0's bitmap is loaded with the coded section's header (one round trip, not two).
  const uint32_t bm0 = shared && lane < 8 && s.data_off + format::kBitmapBytes <= it.src_bytes
                           ? bytes::ld32<kAligned>(it.src + s.data_off + 4 * lane) : 0;
  s.coded_bytes = bytes::ld64<kAligned>(it.src + s.co);
  s.checksum = bytes::ld64<kAligned>(it.src + s.co + 8);
  if (shared) {
    // The plane tables sit between the block table and the blocks; their bitmaps give their sizes,
    // so the blocks' start. Each table's frequencies are checked where a block opens it.
    const uint64_t avail = s.coded_bytes <= it.src_bytes - s.co ? s.co + s.coded_bytes : it.src_bytes;
#pragma unroll
    for (int q = 0; q < format::planes(T); ++q) {
      if (s.data_off + format::kBitmapBytes > avail) {
        s.err = corrupt;
        return s;
      }
      const uint32_t bm = q == 0 ? bm0 : lane < 8 ? bytes::ld32<kAligned>(it.src + s.data_off + 4 * lane) : 0;
      s.tbl[q] = s.data_off;
      s.data_off += format::shared_table_bytes(lanes::sum(static_cast<uint32_t>(__popc(bm))));
    }
  }
  if (s.data_off > it.src_bytes || s.coded_bytes < s.data_off - s.co || s.coded_bytes > it.src_bytes - s.co ||
      (!(s.flags & format::kFlagChecksum) && s.checksum))
    s.err = corrupt;
  else if (nbytes > it.cap)
    s.err = static_cast<int32_t>(Status::kTruncated);
  return s;
}

// A slot of the fast table: f << 20 | sym << 12 | (slot - c). f (at most 2^11) and the bias each
// come out in one operation and feed the state update together, so a step's table lookup is two
// dependent operations deep, not three; the symbol is the low byte of e >> 12, which a byte store
// takes as it is (kernels/NOTES-codec-gpu.md, v16).
__device__ __forceinline__ constexpr uint32_t slot_entry(uint32_t f, uint32_t sym, uint32_t bias) {
  return (f << 20) | (sym << 12) | bias;
}
__device__ __forceinline__ uint32_t slot_freq(uint32_t e) { return e >> 20; }
__device__ __forceinline__ uint32_t slot_bias(uint32_t e) { return e & 0xFFF; }
__device__ __forceinline__ uint32_t slot_sym(uint32_t e) { return (e >> 12) & 0xFF; }
static_assert(kFastProbBits <= 11, "a slot holds f <= 2^11 in 12 bits and the bias in 12");

// A renormalising lane's state after taking 16-bit word `idx` of the words window from v (the
// 32-bit pair holding it): (x << 16) | word, as one byte permutation (x < 2^16 here, so nothing of
// it is lost), not a mask or shift of v then a multiply-add.
__device__ __forceinline__ uint32_t shift_in(uint32_t x, uint32_t v, uint32_t idx) {
  return __byte_perm(x, v, 0x1054u + (idx & 1) * 0x22u);
}

// One plane's block: its table in shared memory, its lanes' states, its words window.
template <bool kAligned>
struct PlaneDecoder {
  uint32_t* table;  // fast: per slot slot_entry(f, sym, slot - c); slow: cum[257] then sym[256]
  uint8_t* win;     // the window's symbols
  const uint8_t* words;
  const uint8_t* end;  // the block's end: words are read below it only
  uint32_t x, w0, w1, w2, seg, pos;
  uint64_t consumed;
  uint32_t hb, bytes;
  int nsym;  // present symbols

  __device__ uint32_t load_seg(uint32_t s) const {
    const uint8_t* p = words + 128 * uint64_t{s} + 4 * lanes::lane();
    if (p + 4 <= end) return bytes::ld32<kAligned>(p);
    return p + 2 <= end ? bytes::ld16<kAligned>(p) : 0;
  }

  // Reads and checks the block's table (its head, or `shared`: its plane's table in a SHARED_TABLE
  // stream, inside the stream as read_stream checked), builds the slot table, loads states and the
  // first words. False when the block is corrupt.
  __device__ __forceinline__ bool open(const uint8_t* shared, const uint8_t* blk, uint64_t nbytes, int pb) {
    const int lane = lanes::lane();
    if (nbytes < (shared ? 128 : 32 + 4 + 128)) return false;
    const uint8_t* tb = shared ? shared : blk;
    const uint32_t mine = lane < 8 ? bytes::ld32<kAligned>(tb + 4 * lane) : 0;
    ans::Table t;
    uint32_t np = 0;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      t.bm[j] = lanes::shfl(mine, j);
      np += lanes::popc(t.bm[j]);
    }
    hb = (shared ? 0 : static_cast<uint32_t>(format::block_table_bytes(np))) + 128;
    if (hb > nbytes) return false;
    bytes = static_cast<uint32_t>(nbytes);
    t.nsym = static_cast<int>(np);
    nsym = t.nsym;
    const uint32_t m = 1u << pb;
    bool ok = true;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      t.f[j] = (t.bm[j] >> lane) & 1 ? bytes::ld16<kAligned>(tb + 32 + 2 * t.rank(j)) : 0;
      ok &= !((t.bm[j] >> lane) & 1) || (t.f[j] >= 1 && t.f[j] <= m);
    }
    uint32_t total = 0;
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) total += t.f[j];
    total = lanes::sum(total);
    if (lanes::ballot(!ok) || total != m) return false;
    t.cumulate();
    lanes::sync();  // the previous block's lanes are done with the table
    if (pb <= kFastProbBits) fill_fast(t);
    else fill_slow(t, m);
    lanes::sync();
    x = bytes::ld32<kAligned>(blk + hb - 128 + 4 * lane);
    words = blk + hb;
    end = blk + nbytes;
    w0 = load_seg(0), w1 = load_seg(1), w2 = load_seg(2);
    seg = 3, pos = 0, consumed = 0;
    return true;
  }

  // Slot table: each present symbol's slots, filled by the whole group.
  __device__ __forceinline__ void fill_fast(const ans::Table& t) {
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      uint32_t mask = t.bm[j];
      while (mask) {
        const int l = __ffs(mask) - 1;
        mask &= mask - 1;
        const uint32_t f = lanes::shfl(t.f[j], l), c = lanes::shfl(t.c[j], l);
        const uint32_t hi = slot_entry(f, l + 32 * j, 0);
        for (uint32_t s = lanes::lane(); s < f; s += lanes::kLanes) table[c + s] = hi | s;
      }
    }
  }
  __device__ __forceinline__ void fill_slow(const ans::Table& t, uint32_t m) {
    uint8_t* sym = reinterpret_cast<uint8_t*>(table + 257);
#pragma unroll
    for (int j = 0; j < ans::kSymsPerLane; ++j) {
      if (t.f[j]) {
        const int r = t.rank(j);
        table[r] = t.c[j];
        sym[r] = static_cast<uint8_t>(lanes::lane() + 32 * j);
      }
    }
    if (lanes::lane() == 0) table[t.nsym] = m;
  }

  // One symbol of the lane's coder: the symbol, and the state advanced past it (before
  // renormalisation).
  template <bool kFast>
  __device__ __forceinline__ uint32_t step(int pb) {
    const uint32_t r = x & ((1u << pb) - 1);
    uint32_t f, bias, s;
    if (kFast) {
      const uint32_t e = table[r];
      f = slot_freq(e), bias = slot_bias(e), s = slot_sym(e);
    } else {
      const uint8_t* sym = reinterpret_cast<const uint8_t*>(table + 257);
      int lo = 0, len = nsym;
#pragma unroll
      for (int it = 0; it < 8; ++it) {
        if (len > 1) {
          const int half = len >> 1;
          if (table[lo + half] <= r) lo += half, len -= half;
          else len = half;
        }
      }
      f = table[lo + 1] - table[lo], bias = r - table[lo], s = sym[lo];
    }
    x = f * (x >> pb) + bias;
    return s;
  }

  // Renormalisation of the group's lanes: one ballot, words from the register window. w0..w2 hold
  // the 192 words from `consumed` on and pos counts from there; a group reads at most 32 words, so
  // from pos < 64 two groups read below 128 (w0, w1) before the window must move: whole windows move
  // it after every second group only (shift), taking the branch and its reconvergence off the
  // other steps.
  __device__ __forceinline__ void refill(bool active, bool shift = true) {
    const bool ren = active && x < format::kAnsLow;
    const uint32_t b = lanes::ballot(ren);
    const uint32_t idx = pos + lanes::popc(b & lanes::mask_lt());
    const uint32_t v0 = lanes::shfl(w0, (idx >> 1) & 31), v1 = lanes::shfl(w1, (idx >> 1) & 31);
    const uint32_t v = idx < 64 ? v0 : v1;
    if (ren) x = shift_in(x, v, idx);
    pos += lanes::popc(b);
    if (shift && pos >= 64) {
      pos -= 64, consumed += 64;
      w0 = w1, w1 = w2, w2 = load_seg(seg++);
    }
  }

  // A correct block leaves every lane at L and has been read to its last word.
  __device__ bool closed() const {
    return !lanes::ballot(x != format::kAnsLow) && format::align_up(hb + 2 * (consumed + pos)) == bytes;
  }
};

template <DType T, bool kAligned>
struct BlockDecoder {
  using C = split::Chunk<T>;
  static constexpr int kPlanes = format::planes(T);
  static constexpr int kEb = static_cast<int>(format::elem_bytes(T));
  PlaneDecoder<kAligned> pl[kPlanes];

  // Chunks of a window each lane merges.
  static constexpr int kCpl = kWinSyms / C::kSyms / lanes::kLanes;

  // Raw bits of the window's chunks, loaded before the window is decoded so that their latency
  // hides behind the decoding.
  __device__ __forceinline__ void fetch(const Item& it, const Stream& st, uint64_t k, uint32_t s0, uint32_t cnt,
                        uint32_t (&raw)[kCpl][2][2]) const {
    const uint64_t c0 = ((k << st.lb) + s0) / C::kSyms;
    const uint32_t nq = (cnt + C::kSyms - 1) / C::kSyms;
    if (cnt == kWinSyms && (c0 + kCpl * lanes::kLanes) * C::kElems <= st.count) {
      // A whole window inside the buffer (the common case): no bounds per chunk.
      const uint8_t* const plane[2] = {it.src + format::raw_subplane_offset(T, st.count, 0),
                                       it.src + format::raw_subplane_offset(T, st.count, format::raw_subplanes(T) - 1)};
#pragma unroll
      for (int u = 0; u < kCpl; ++u) split::load_raw_inside<T, kAligned>(plane, c0 + lanes::lane() + lanes::kLanes * u, raw[u]);
      return;
    }
#pragma unroll
    for (int u = 0; u < kCpl; ++u) {
      const uint32_t q = lanes::lane() + lanes::kLanes * u;
      if (q < nq) split::load_raw<T, kAligned>(it.src, st.count, c0 + q, raw[u]);
    }
  }

  // Symbols [k B + s0, k B + s0 + cnt) of every plane, in the windows, merged with their raw bits
  // into dst.
  __device__ __forceinline__ uint64_t merge(const Item& it, const Stream& st, uint64_t k, uint32_t s0, uint32_t cnt,
                            const uint32_t (&raw)[kCpl][2][2]) const {
    uint64_t h = 0;
    const uint64_t nbytes = st.count * kEb;
    const uint64_t c0 = ((k << st.lb) + s0) / C::kSyms;
    const uint32_t nq = (cnt + C::kSyms - 1) / C::kSyms;
#pragma unroll
    for (int u = 0; u < kCpl; ++u) {
      const uint32_t q = lanes::lane() + lanes::kLanes * u;
      if (q >= nq) continue;
      const uint64_t gc = c0 + q;
      uint32_t sym[2][4] = {}, out[4];
#pragma unroll
      for (int p = 0; p < kPlanes; ++p) bytes::ld_n<true>(pl[p].win + q * C::kSyms, C::kSyms, sym[p]);
      C::merge(sym, raw[u], out);
      const uint64_t off = gc * 16;
      split::store_output<kAligned>(it.dst, nbytes, gc, out);
      if (st.flags & format::kFlagChecksum) {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
          // The last word counts only its bytes inside the data, zero-padded (docs/FORMAT.md).
          const uint64_t at = off + 4 * w;
          const uint32_t keep = at + 4 <= nbytes ? 0xFFFFFFFFu : (1u << (8 * (nbytes - at))) - 1;
          if (at < nbytes) h += format::mix64(((off / 4 + w) << 32) | (out[w] & keep));
        }
      }
    }
    return h;
  }

  template <bool kFast>
  __device__ __forceinline__ uint64_t run(const Item& it, const Stream& st, uint64_t k, uint32_t n) {
    uint64_t h = 0;
    const int lane = lanes::lane();
    const uint32_t groups = (n + 31) / 32;
    for (uint32_t g0 = 0; g0 < groups; g0 += kWinGroups) {
      const uint32_t g1 = min(groups, g0 + kWinGroups), cnt = min(n - g0 * 32, kWinSyms);
      uint32_t raw[kCpl][2][2];
      fetch(it, st, k, g0 * 32, cnt, raw);
      if (g1 - g0 == kWinGroups && cnt == kWinSyms) {
        // A whole window, every lane active: unrolled, no predicates (the common case); the words
        // window moves every second group (refill).
        static_assert(kWinGroups % 2 == 0, "the words window moves after odd groups");
#pragma unroll
        for (uint32_t u = 0; u < kWinGroups; ++u) {
#pragma unroll
          for (int p = 0; p < kPlanes; ++p) pl[p].win[u * 32 + lane] = static_cast<uint8_t>(pl[p].template step<kFast>(st.pb));
#pragma unroll
          for (int p = 0; p < kPlanes; ++p) pl[p].refill(true, (u & 1) != 0);
        }
      } else {
#pragma unroll 1
      for (uint32_t g = g0; g < g1; ++g) {
        const bool active = g * 32 + lane < n;
#pragma unroll
        for (int p = 0; p < kPlanes; ++p) {
          const uint32_t x0 = pl[p].x;
          const uint32_t s = pl[p].template step<kFast>(st.pb);
          if (!active) pl[p].x = x0;
          else pl[p].win[(g - g0) * 32 + lane] = static_cast<uint8_t>(s);
        }
#pragma unroll
        for (int p = 0; p < kPlanes; ++p) pl[p].refill(active);
      }
      }
      lanes::sync();
      h += merge(it, st, k, g0 * 32, cnt, raw);
      lanes::sync();
    }
    return h;
  }
};

// The kernel's body: items one after another, each item's blocks spread over all groups.
template <DType T, bool kAligned>
__device__ void run(const Params& p, uint8_t* smem) {
  constexpr int kPlanes = format::planes(T);
  constexpr int kEb = static_cast<int>(format::elem_bytes(T));
  const int lane = lanes::lane();
  const uint32_t epoch = scan::launch_epoch(p.state);
  const uint32_t groups = gridDim.x * (blockDim.x / lanes::kLanes);
  // A group's first block: CTA-major (gid), or group-major (spread: group 0 of every CTA, then group
  // 1, ...) for an item whose blocks take between half a round and one round of the groups.
  // Measured on the H200 (kernels/NOTES-codec-gpu.md, v17): group-major decodes such launches
  // 5-8% faster (bf16, fp16 and e4m3 at 16 and 64 MiB: 2048 blocks on 3168 groups) and is 5-10%
  // slower where the blocks take several rounds (1 GiB, e5m2 from 16 MiB); below half a round it
  // was 0-4% slower (fp32 1 MiB, fp64 4 MiB), within the runs' spread.
  const uint32_t gid = blockIdx.x * (blockDim.x / lanes::kLanes) + lanes::group();
  const uint32_t spread = lanes::group() * gridDim.x + blockIdx.x;
  uint8_t* gs = smem + lanes::group() * group_smem_bytes<T>();
  BlockDecoder<T, kAligned> d;
#pragma unroll
  for (int q = 0; q < kPlanes; ++q) {
    d.pl[q].table = reinterpret_cast<uint32_t*>(gs + q * kTableBytes);
    d.pl[q].win = gs + kPlanes * kTableBytes + q * kWinSyms;
  }
  for (int i = 0; i < p.n; ++i) {
    const Item it = p.item[i];  // by value: kept in registers, not reloaded from the parameters
    const Stream st = read_stream<T, kAligned>(it);
    if (st.err) {
      if (gid == 0 && lane == 0) scan::record_error(p.state, i, st.err);
      continue;
    }
    const uint64_t nbytes = st.count * kEb;
    if (st.flags & format::kFlagStored) {
      const uint64_t nch = (nbytes + 15) / 16;
      for (uint64_t c = uint64_t{gid} * 32 + lane; c < nch; c += uint64_t{groups} * 32) {
        uint32_t w[4];
        const uint8_t* s = it.src + format::kHeaderBytes + 16 * c;
        if (16 * c + 16 <= nbytes) {
          bytes::ld128<kAligned>(s, w);
          bytes::st128<kAligned>(it.dst + 16 * c, w);
        } else {
          bytes::ld_partial(s, static_cast<int>(nbytes - 16 * c), w);
          bytes::st_partial(it.dst + 16 * c, static_cast<int>(nbytes - 16 * c), w);
        }
      }
      continue;
    }
    const uint64_t nsym = format::symbols_per_plane(T, st.count);
    const uint64_t nbe = format::blocks_per_plane(T, st.count, st.lb);
    const uint64_t nblocks = kPlanes * nbe, limit = st.coded_bytes - (st.data_off - st.co);
    const uint8_t* coded = it.src + st.co;
    uint64_t h = 0;
    // Block bi of the stream into plane decoder c: bounds of its table entry, then its header.
    // (In a SHARED_TABLE stream bit 0 of an entry marks a block with its own table.)
    const uint64_t own_bit = st.tbl[0] ? 1 : 0;
    const auto open = [&](int c, uint64_t bi) {
      const uint64_t b0 = bi ? bytes::ld64<kAligned>(coded + 16 + 8 * (bi - 1)) & ~own_bit : 0;
      const uint64_t e1 = bytes::ld64<kAligned>(coded + 16 + 8 * bi), b1 = e1 & ~own_bit;
      const bool own = !own_bit || (e1 & 1);
      return !(b0 % 16) && !(b1 % 16) && b0 <= b1 && b1 <= limit && (bi != nblocks - 1 || b1 == limit) &&
             d.pl[c].open(own ? nullptr : it.src + st.tbl[c], it.src + st.data_off + b0, b1 - b0, st.pb);
    };
    const auto nsyms = [&](uint64_t k) { return static_cast<uint32_t>(min(uint64_t{1} << st.lb, nsym - (k << st.lb))); };
    const uint32_t first = nbe <= groups && 2 * nbe > groups ? spread : gid;
    for (uint64_t k = first; k < nbe; k += groups) {
      const uint32_t n = nsyms(k);
      bool ok = true;
#pragma unroll
      for (int q = 0; q < kPlanes; ++q) ok = ok && open(q, q * nbe + k);
      if (ok) {
        if (st.pb <= kFastProbBits) h += d.template run<true>(it, st, k, n);
        else h += d.template run<false>(it, st, k, n);
#pragma unroll
        for (int q = 0; q < kPlanes; ++q) ok = ok && d.pl[q].closed();
      }
      if (!ok && lane == 0) scan::record_error(p.state, i, static_cast<int32_t>(Status::kCorruptStream));
    }
    if (st.flags & format::kFlagChecksum) {
      h = lanes::sum(h);
      if (lane == 0 && h) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[i]), h);
    }
  }
  if (!scan::finish(p.state)) return;
  for (int i = lane; i < p.n; i += lanes::kLanes) {
    int32_t err = p.state->err[i];
    const Item& it = p.item[i];
    uint64_t count = 0;
    if (!err) {
      const uint8_t flags = it.src[6];
      count = bytes::ld64<false>(it.src + 8);
      if ((flags & format::kFlagChecksum) && !(flags & format::kFlagStored) &&
          bytes::ld64<false>(it.src + format::coded_offset(T, count) + 8) != p.state->checksum[i])
        err = static_cast<int32_t>(Status::kCorruptStream);
    }
    p.results[i].size = err ? 0 : count;
    p.results[i].status = err;
  }
  scan::reset(p.state, p.n, epoch);
}

}  // namespace mpizip::kernels::decode
