// Decoding fused with the reduce (kernels/codec_gpu.h, decode_fold): the fold of P inputs in rank
// order (kernels/reduce.h), where up to kS of the inputs are compressed streams decoded on the fly
// and the others are raw elements. No decoded stream ever goes to memory: a 32-lane group decodes
// the same window of symbols of every stream into shared memory, merges each 16-byte chunk with its
// raw bits in registers, folds the P chunks in rank order and writes the result once.
//
// Work unit: the elements of one block of the stream with the largest block, so every stream's
// blocks (block sizes are powers of two from one origin) tile a unit exactly; a stream with smaller
// blocks opens its next block at a window boundary inside the unit. The streams' rANS chains run in
// lock step, kS independent chains per lane, which is what hides their latency (the fp64 decoder
// does the same with its two planes).
//
// Bounds and checks are the decoder's (kernels/ans_decode.cuh): a corrupt stream is reported in
// its result and only the output is written.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/ans_decode.cuh"
#include "kernels/reduce.h"

namespace mpizip::kernels::fold {

using format::DType;

inline constexpr int kMaxInputs = 64;

struct Params {
  const uint8_t* src[kMaxInputs];  // input r: its elements, or its stream
  uint64_t bytes[kMaxInputs];      // stream bytes; 0 for raw elements
  int8_t slot[kMaxInputs];         // input r's stream slot, -1 for raw elements
  int stream_input[kMaxInputs];    // slot d's input
  int n, nstreams;
  reduce::Op op;
  uint8_t* out;
  uint64_t count;
  scan::State* state;
  gpu::DeviceResult* results;  // per slot
};

// Symbols of a window: 512 for 16-bit types, fewer for wider ones so that every lane merges two
// chunks a window whatever the type (the raw bits of each stream's window sit in registers).
template <DType T>
__host__ __device__ constexpr uint32_t win_syms() {
  return 2 * lanes::kLanes * split::Chunk<T>::kSyms;
}
// Shared memory of one stream slot of a group: its planes' tables and windows.
template <DType T>
__host__ __device__ constexpr uint32_t slot_smem_bytes() {
  return format::planes(T) * (decode::kTableBytes + win_syms<T>());
}

// The fold of one chunk (16 bytes of elements) over the inputs in rank order.
template <DType T, reduce::Op O>
struct ChunkFold {
  using F = reduce::Fold<T, O>;
  using S = typename F::Storage;
  static constexpr int V = 16 / sizeof(S);
  typename F::State acc[V];

  __device__ __forceinline__ void add(bool first, const uint32_t (&w)[4]) {
    S x[V];
    memcpy(x, w, 16);
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] = first ? F::first(x[i]) : F::next(acc[i], x[i]);
  }
  __device__ __forceinline__ void result(uint32_t (&w)[4]) const {
    S x[V];
#pragma unroll
    for (int i = 0; i < V; ++i) x[i] = F::last(acc[i]);
    memcpy(w, x, 16);
  }
};

// One stream slot of a group: its header's facts, its planes' decoders, its state.
template <DType T>
struct Slot {
  static constexpr int kPlanes = format::planes(T);
  decode::PlaneDecoder<true> pl[kPlanes];
  const uint8_t* src;
  uint64_t data_off, limit, nbe;
  const uint8_t* coded;
  int lb, pb;
  bool coded_form;  // false: STORED, its elements follow the header
  bool ok;          // the header is valid: the slot takes part
  bool checksum;
  uint64_t h;
};

// Opens block k of every plane of a slot; false when the block is corrupt.
template <DType T>
__device__ __forceinline__ bool open_block(Slot<T>& s, uint64_t k) {
  constexpr int kPlanes = format::planes(T);
  const uint64_t nblocks = kPlanes * s.nbe;
  bool ok = true;
#pragma unroll
  for (int q = 0; q < kPlanes; ++q) {
    const uint64_t bi = q * s.nbe + k;
    const uint64_t b0 = bi ? bytes::ld64<true>(s.coded + 16 + 8 * (bi - 1)) : 0;
    const uint64_t b1 = bytes::ld64<true>(s.coded + 16 + 8 * bi);
    ok = ok && !(b0 % 16) && !(b1 % 16) && b0 <= b1 && b1 <= s.limit &&
         (bi != nblocks - 1 || b1 == s.limit) && s.pl[q].open(s.src + s.data_off + b0, b1 - b0, s.pb);
  }
  return ok;
}

template <DType T, int kS>
__device__ void run(const Params& p, uint8_t* smem) {
  using C = split::Chunk<T>;
  constexpr int kPlanes = format::planes(T);
  constexpr uint64_t kEb = format::elem_bytes(T);
  constexpr uint32_t kWin = win_syms<T>();
  constexpr int kCpl = 2;
  static_assert(kWin == kCpl * lanes::kLanes * C::kSyms, "two chunks a lane per window");
  const int lane = lanes::lane();
  const uint32_t epoch = scan::launch_epoch(p.state);
  const uint32_t groups = gridDim.x * (blockDim.x / lanes::kLanes);
  const uint32_t gid = blockIdx.x * (blockDim.x / lanes::kLanes) + lanes::group();
  uint8_t* gs = smem + lanes::group() * kS * slot_smem_bytes<T>();
  const uint64_t nbytes = p.count * kEb;
  const auto corrupt = static_cast<int32_t>(Status::kCorruptStream);

  // The streams' headers, checked by every group; the unit is the largest block.
  Slot<T> sl[kS];
  int max_lb = format::kMinLog2Block;
#pragma unroll
  for (int d = 0; d < kS; ++d) {
    Slot<T>& s = sl[d];
    s.ok = false, s.coded_form = false, s.checksum = false, s.h = 0, s.lb = format::kMinLog2Block, s.pb = 0;
    s.src = nullptr, s.coded = nullptr, s.data_off = s.limit = s.nbe = 0;
#pragma unroll
    for (int q = 0; q < kPlanes; ++q) {
      s.pl[q].table = reinterpret_cast<uint32_t*>(gs + d * slot_smem_bytes<T>() + q * decode::kTableBytes);
      s.pl[q].win = gs + d * slot_smem_bytes<T>() + kPlanes * decode::kTableBytes + q * kWin;
    }
    if (d >= p.nstreams) continue;
    const int r = p.stream_input[d];
    const decode::Item it{p.src[r], p.bytes[r], p.out, nbytes};
    const decode::Stream st = decode::read_stream<T, true>(it);
    int32_t err = st.err;
    if (!err && st.count != p.count) err = st.count > p.count ? static_cast<int32_t>(Status::kTruncated) : corrupt;
    if (err) {
      if (gid == 0 && lane == 0) scan::record_error(p.state, d, err);
      continue;
    }
    s.ok = true;
    s.src = it.src;
    s.coded_form = !(st.flags & format::kFlagStored);
    if (!s.coded_form) continue;
    s.lb = st.lb, s.pb = st.pb;
    s.checksum = st.flags & format::kFlagChecksum;
    s.data_off = st.data_off;
    s.coded = it.src + st.co;
    s.limit = st.coded_bytes - (st.data_off - st.co);
    s.nbe = format::blocks_per_plane(T, st.count, st.lb);
    max_lb = max(max_lb, st.lb);
  }

  const uint64_t unit = uint64_t{1} << max_lb;
  const uint64_t units = (p.count + unit - 1) >> max_lb;
  for (uint64_t u = gid; u < units; u += groups) {
    const uint64_t base = u << max_lb;
    const uint32_t n = static_cast<uint32_t>(min(unit, p.count - base));
    for (uint32_t w0 = 0; w0 < n; w0 += kWin) {
      const uint64_t at = base + w0;  // first symbol of the window
      const uint32_t cnt = min(n - w0, kWin);
      // A slot whose block starts here opens it.
#pragma unroll
      for (int d = 0; d < kS; ++d) {
        Slot<T>& s = sl[d];
        if (!s.ok || !s.coded_form || (at & ((uint64_t{1} << s.lb) - 1))) continue;
        if (!open_block(s, at >> s.lb)) {
          s.ok = false;
          if (lane == 0) scan::record_error(p.state, d, corrupt);
        }
      }
      // The window's raw bits of every stream, loaded before its symbols are decoded.
      const uint64_t c0 = at / C::kSyms;
      const uint32_t nq = (cnt + C::kSyms - 1) / C::kSyms;
      uint32_t raw[kS][kCpl][2][2];
#pragma unroll
      for (int d = 0; d < kS; ++d) {
#pragma unroll
        for (int v = 0; v < kCpl; ++v) {
          const uint32_t q = lane + lanes::kLanes * v;
          raw[d][v][0][0] = raw[d][v][0][1] = raw[d][v][1][0] = raw[d][v][1][1] = 0;
          if (sl[d].ok && sl[d].coded_form && q < nq) split::load_raw<T, true>(sl[d].src, p.count, c0 + q, raw[d][v]);
        }
      }
      // The window's symbols of every stream, the chains in lock step.
      const uint32_t ngroups = (cnt + lanes::kLanes - 1) / lanes::kLanes;
      for (uint32_t g = 0; g < ngroups; ++g) {
        const bool active = g * lanes::kLanes + lane < cnt;
#pragma unroll
        for (int d = 0; d < kS; ++d) {
          Slot<T>& s = sl[d];
          if (!s.ok || !s.coded_form) continue;
#pragma unroll
          for (int q = 0; q < kPlanes; ++q) {
            const uint32_t x0 = s.pl[q].x;
            const uint32_t sym = s.pb <= decode::kFastProbBits ? s.pl[q].template step<true>(s.pb)
                                                                 : s.pl[q].template step<false>(s.pb);
            if (!active) s.pl[q].x = x0;
            else s.pl[q].win[g * lanes::kLanes + lane] = static_cast<uint8_t>(sym);
          }
        }
#pragma unroll
        for (int d = 0; d < kS; ++d) {
          if (!sl[d].ok || !sl[d].coded_form) continue;
#pragma unroll
          for (int q = 0; q < kPlanes; ++q) sl[d].pl[q].refill(active);
        }
      }
      lanes::sync();
      // Merge, fold in rank order, write.
#pragma unroll
      for (int v = 0; v < kCpl; ++v) {
        const uint32_t q = lane + lanes::kLanes * v;
        if (q >= nq) continue;
        const uint64_t gc = c0 + q;
        uint32_t val[kS][4];
#pragma unroll
        for (int d = 0; d < kS; ++d) {
          Slot<T>& s = sl[d];
          val[d][0] = val[d][1] = val[d][2] = val[d][3] = 0;
          if (d >= p.nstreams) continue;
          if (!s.coded_form) {
            if (s.ok) split::load_input<true>(s.src + format::kHeaderBytes, nbytes, gc, val[d]);
            continue;
          }
          if (!s.ok) continue;
          uint32_t sym[2][4] = {};
#pragma unroll
          for (int pl = 0; pl < kPlanes; ++pl) bytes::ld_n<true>(s.pl[pl].win + q * C::kSyms, C::kSyms, sym[pl]);
          C::merge(sym, raw[d][v], val[d]);
          if (s.checksum) {
            const uint64_t off = gc * 16;
#pragma unroll
            for (int w = 0; w < 4; ++w) {
              const uint64_t b = off + 4 * w;
              const uint32_t keep = b + 4 <= nbytes ? 0xFFFFFFFFu : (1u << (8 * (nbytes - b))) - 1;
              if (b < nbytes) s.h += format::mix64(((off / 4 + w) << 32) | (val[d][w] & keep));
            }
          }
        }
        uint32_t res[4];
        auto fold_all = [&](auto op_tag) {
          ChunkFold<T, decltype(op_tag)::value> f;
          for (int r = 0; r < p.n; ++r) {
            const int d = p.slot[r];
            uint32_t x[4];
            if (d < 0) {
              split::load_input<true>(p.src[r], nbytes, gc, x);
            } else {
#pragma unroll
              for (int e = 0; e < kS; ++e)
                if (e == d) x[0] = val[e][0], x[1] = val[e][1], x[2] = val[e][2], x[3] = val[e][3];
            }
            f.add(r == 0, x);
          }
          f.result(res);
        };
        switch (p.op) {
          case reduce::Op::kSum: fold_all(std::integral_constant<reduce::Op, reduce::Op::kSum>{}); break;
          case reduce::Op::kProd: fold_all(std::integral_constant<reduce::Op, reduce::Op::kProd>{}); break;
          case reduce::Op::kMin: fold_all(std::integral_constant<reduce::Op, reduce::Op::kMin>{}); break;
          case reduce::Op::kMax: fold_all(std::integral_constant<reduce::Op, reduce::Op::kMax>{}); break;
        }
        split::store_output<true>(p.out, nbytes, gc, res);
      }
      lanes::sync();
      // A slot whose block ends here must have consumed it exactly.
      const uint64_t end = at + cnt;
#pragma unroll
      for (int d = 0; d < kS; ++d) {
        Slot<T>& s = sl[d];
        if (!s.ok || !s.coded_form || ((end & ((uint64_t{1} << s.lb) - 1)) && end != p.count)) continue;
        bool closed = true;
#pragma unroll
        for (int q = 0; q < kPlanes; ++q) closed = closed && s.pl[q].closed();
        if (!closed) {
          s.ok = false;
          if (lane == 0) scan::record_error(p.state, d, corrupt);
        }
      }
    }
  }
#pragma unroll
  for (int d = 0; d < kS; ++d) {
    if (!sl[d].checksum) continue;
    const uint64_t h = lanes::sum(sl[d].h);
    if (lane == 0 && h) atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[d]), h);
  }
  if (!scan::finish(p.state)) return;
  for (int d = lane; d < p.nstreams; d += lanes::kLanes) {
    int32_t err = p.state->err[d];
    const uint8_t* src = p.src[p.stream_input[d]];
    uint64_t count = 0;
    if (!err) {
      const uint8_t flags = src[6];
      count = bytes::ld64<true>(src + 8);
      if ((flags & format::kFlagChecksum) && !(flags & format::kFlagStored) &&
          bytes::ld64<true>(src + format::coded_offset(T, count) + 8) != p.state->checksum[d])
        err = corrupt;
    }
    p.results[d].size = err ? 0 : count;
    p.results[d].status = err;
  }
  scan::reset(p.state, p.nstreams, epoch);
}

}  // namespace mpizip::kernels::fold
