// Decoding fused with the reduce (kernels/codec_gpu.h, decode_fold): the fold of P inputs in rank
// order (kernels/reduce.h), where up to kS of the inputs are compressed streams decoded on the fly
// and the others are raw elements. No decoded stream ever goes to memory. A CTA has one 32-lane
// group per stream: group d decodes a window of stream d's symbols into shared memory, exactly as
// the decoder's groups do (one rANS chain a lane, the same occupancy), then the CTA's threads merge
// each 16-byte chunk of every stream with its raw bits in registers, fold the P chunks in rank order
// and write the result once.
//
// Work unit: the elements of one block of the stream with the largest block, so every stream's
// blocks (block sizes are powers of two from one origin) tile a unit exactly; a stream with smaller
// blocks opens its next block at a window boundary inside the unit.
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
  uint8_t* out;
  uint64_t count;
  scan::State* state;
  gpu::DeviceResult* results;  // per slot
};


// The fold of one chunk (16 bytes of elements) over the inputs in rank order.
template <DType T, reduce::Op O>
struct ChunkFold {
  using F = reduce::Fold<reduce::type_of(T), O>;
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

// What every thread of the CTA needs to know about a stream (written once by its group).
struct SlotInfo {
  const uint8_t* src;
  int lb;
  int usable;  // the header is valid
  int coded;   // 0: STORED, its elements follow the header
  int checksum;
};

// The decoding side of one stream, held by its group.
template <DType T>
struct Slot {
  static constexpr int kPlanes = format::planes(T);
  decode::PlaneDecoder<true> pl[kPlanes];
  const uint8_t* src = nullptr;
  const uint8_t* coded = nullptr;
  uint64_t data_off = 0, limit = 0, nbe = 0;
  const uint8_t* tbl[2] = {nullptr, nullptr};  // a SHARED_TABLE stream's plane tables
  int lb = format::kMinLog2Block, pb = 0;
  bool decoding = false;  // a valid coded stream whose blocks have all opened and closed so far

  // Opens block k of every plane; false when the block is corrupt.
  __device__ __forceinline__ bool open_block(uint64_t k) {
    const uint64_t nblocks = kPlanes * nbe;
    bool ok = true;
#pragma unroll
    for (int q = 0; q < kPlanes; ++q) {
      const uint64_t bi = q * nbe + k;
      // (In a SHARED_TABLE stream bit 0 of an entry marks a block with its own table.)
      const uint64_t own_bit = tbl[0] ? 1 : 0;
      const uint64_t b0 = bi ? bytes::ld64<true>(coded + 16 + 8 * (bi - 1)) & ~own_bit : 0;
      const uint64_t e1 = bytes::ld64<true>(coded + 16 + 8 * bi), b1 = e1 & ~own_bit;
      const bool own = !own_bit || (e1 & 1);
      ok = ok && !(b0 % 16) && !(b1 % 16) && b0 <= b1 && b1 <= limit && (bi != nblocks - 1 || b1 == limit) &&
           pl[q].open(own ? nullptr : tbl[q], src + data_off + b0, b1 - b0, pb);
    }
    return ok;
  }

  // Symbols [0, cnt) of the window, into the planes' windows.
  __device__ __forceinline__ void decode_window(uint32_t cnt) {
    const int lane = lanes::lane();
    const uint32_t ngroups = (cnt + lanes::kLanes - 1) / lanes::kLanes;
    const bool fast = pb <= decode::kFastProbBits;
    for (uint32_t g = 0; g < ngroups; ++g) {
      const bool active = g * lanes::kLanes + lane < cnt;
#pragma unroll
      for (int q = 0; q < kPlanes; ++q) {
        const uint32_t x0 = pl[q].x;
        const uint32_t sym = fast ? pl[q].template step<true>(pb) : pl[q].template step<false>(pb);
        if (!active) pl[q].x = x0;
        else pl[q].win[g * lanes::kLanes + lane] = static_cast<uint8_t>(sym);
      }
#pragma unroll
      for (int q = 0; q < kPlanes; ++q) pl[q].refill(active);
    }
  }
};

// Raw bytes of one window of a stream in shared memory, per sub-plane: the window's symbols times
// the sub-plane's bytes per element.
template <DType T>
__host__ __device__ constexpr uint32_t raw_window_bytes(int r) {
  return r < format::raw_subplanes(T)
             ? static_cast<uint32_t>(decode::kWinSyms / split::Chunk<T>::kSyms * split::raw_unit<T>(r))
             : 0;
}
template <DType T>
__host__ __device__ constexpr uint32_t raw_stage_bytes() {
  return raw_window_bytes<T>(0) + raw_window_bytes<T>(1);
}
// Shared memory of one stream's group: its planes' tables and windows (the decoder's), and the
// window's raw bytes.
template <DType T>
__host__ __device__ constexpr uint32_t slot_smem_bytes() {
  return decode::group_smem_bytes<T>() + raw_stage_bytes<T>();
}

// CTAs of kS groups a multiprocessor should hold: as many groups as the decoder keeps resident
// (kernels/codec_gpu.cu: 24 for 16-bit types, fp32 20, fp64 12), as far as shared memory allows.
template <DType T, int kS>
__host__ __device__ constexpr int min_ctas() {
  constexpr int groups = T == DType::kFp64 ? 12 : T == DType::kFp32 ? 20 : 24;
  constexpr int fit = static_cast<int>((227u << 10) / slot_smem_bytes<T>());
  return (groups < fit ? groups : fit) / kS > 0 ? (groups < fit ? groups : fit) / kS : 1;
}


// Copies n bytes (at most 16; the rest of the 16 zero) from global memory to shared memory: an
// asynchronous copy where the hardware has one (completed by copies_wait), else a plain one.
__device__ __forceinline__ void copy16_async(uint8_t* dst, const uint8_t* src, uint32_t n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n) : "memory");
#else
  uint32_t w[4];
  if (n == 16) bytes::ld128<true>(src, w);
  else bytes::ld_partial(src, static_cast<int>(n), w);
  bytes::st128<true>(dst, w);
#endif
}
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The kernel's body for op O (p.op); blockDim.x == kS * 32, nstreams <= kS (group d decodes stream d; groups
// without a stream only merge and fold).
template <DType T, int kS, reduce::Op O>
__device__ void run(const Params& p, uint8_t* smem) {
  using C = split::Chunk<T>;
  constexpr int kPlanes = format::planes(T);
  constexpr uint64_t kEb = format::elem_bytes(T);
  constexpr uint32_t kWin = decode::kWinSyms;
  constexpr int kThreads = kS * lanes::kLanes;
  constexpr int kCpt = (kWin / C::kSyms + kThreads - 1) / kThreads;  // chunks a thread merges a window
  __shared__ SlotInfo info[kS];
  __shared__ unsigned long long hsum[kS];  // each stream's checksum terms, summed
  const int lane = lanes::lane(), me = lanes::group();
  const int tid = static_cast<int>(threadIdx.x);
  const uint32_t epoch = scan::launch_epoch(p.state);
  const uint64_t nbytes = p.count * kEb;
  const auto corrupt = static_cast<int32_t>(Status::kCorruptStream);
  const auto window = [&](int d, int q) { return smem + d * slot_smem_bytes<T>() + kPlanes * decode::kTableBytes + q * kWin; };
  const auto stage = [&](int d) { return smem + d * slot_smem_bytes<T>() + decode::group_smem_bytes<T>(); };

  // This group's stream: its header, checked.
  Slot<T> s;
#pragma unroll
  for (int q = 0; q < kPlanes; ++q) {
    s.pl[q].table = reinterpret_cast<uint32_t*>(smem + me * slot_smem_bytes<T>() + q * decode::kTableBytes);
    s.pl[q].win = window(me, q);
  }
  if (me < p.nstreams) {
    const int r = p.stream_input[me];
    const decode::Item it{p.src[r], p.bytes[r], p.out, nbytes};
    const decode::Stream st = decode::read_stream<T, true>(it);
    int32_t err = st.err;
    if (!err && st.count != p.count) err = st.count > p.count ? static_cast<int32_t>(Status::kTruncated) : corrupt;
    SlotInfo si{it.src, format::kMinLog2Block, !err, !(st.flags & format::kFlagStored), 0};
    if (err) {
      if (blockIdx.x == 0 && lane == 0) scan::record_error(p.state, me, err);
    } else if (si.coded) {
      s.src = it.src;
      s.lb = si.lb = st.lb, s.pb = st.pb;
      si.checksum = (st.flags & format::kFlagChecksum) != 0;
      s.data_off = st.data_off;
#pragma unroll
      for (int q = 0; q < kPlanes; ++q) s.tbl[q] = st.tbl[q] ? it.src + st.tbl[q] : nullptr;
      s.coded = it.src + st.co;
      s.limit = st.coded_bytes - (st.data_off - st.co);
      s.nbe = format::blocks_per_plane(T, st.count, st.lb);
      s.decoding = true;
    }
    if (lane == 0) info[me] = si, hsum[me] = 0;
  }
  __syncthreads();
  int max_lb = format::kMinLog2Block;
#pragma unroll
  for (int d = 0; d < kS; ++d)
    if (d < p.nstreams && info[d].usable && info[d].coded) max_lb = max(max_lb, info[d].lb);

  const uint64_t unit = uint64_t{1} << max_lb;
  const uint64_t units = (p.count + unit - 1) >> max_lb;
  for (uint64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const uint64_t base = u << max_lb;
    const uint32_t n = static_cast<uint32_t>(min(unit, p.count - base));
    for (uint32_t w0 = 0; w0 < n; w0 += kWin) {
      const uint64_t at = base + w0;  // first symbol of the window
      const uint32_t cnt = min(n - w0, kWin);
      const uint64_t c0 = at / C::kSyms;
      const uint32_t nq = (cnt + C::kSyms - 1) / C::kSyms;
      // The window's raw bits of every stream, copied to shared memory while the symbols decode.
#pragma unroll
      for (int d = 0; d < kS; ++d) {
        if (d >= p.nstreams || !info[d].usable || !info[d].coded) continue;
#pragma unroll
        for (int r = 0; r < format::raw_subplanes(T); ++r) {
          const uint64_t size = format::raw_subplane_bytes(T, p.count, r);
          const uint64_t first = c0 * split::raw_unit<T>(r);
          const uint8_t* from = info[d].src + format::raw_subplane_offset(T, p.count, r) + first;
          uint8_t* to = stage(d) + (r ? raw_window_bytes<T>(0) : 0);
          const uint32_t len = static_cast<uint32_t>(min(uint64_t{raw_window_bytes<T>(r)}, size - first));
          for (uint32_t b = 16 * tid; b < len; b += 16 * kThreads) copy16_async(to + b, from + b, min(16u, len - b));
        }
      }
      // This group's window: its block opened where one starts, then its symbols.
      if (s.decoding && !(at & ((uint64_t{1} << s.lb) - 1)) && !s.open_block(at >> s.lb)) {
        s.decoding = false;
        if (lane == 0) scan::record_error(p.state, me, corrupt);
      }
      if (s.decoding) s.decode_window(cnt);
      copies_wait();
      __syncthreads();
      // Merge each stream's chunk where the fold takes it, fold in rank order, write.
#pragma unroll
      for (int k = 0; k < kCpt; ++k) {
        const uint32_t c = tid + kThreads * k;
        if (c >= nq) continue;
        const uint64_t gc = c0 + c;
        ChunkFold<T, O> f;
        for (int r = 0; r < p.n; ++r) {
          const int d = p.slot[r];
          uint32_t x[4] = {0, 0, 0, 0};
          if (d < 0) {
            split::load_input<true>(p.src[r], nbytes, gc, x);
          } else {
#pragma unroll
            for (int e = 0; e < kS; ++e) {
              if (e != d || !info[e].usable) continue;
              if (!info[e].coded) {
                split::load_input<true>(info[e].src + format::kHeaderBytes, nbytes, gc, x);
                continue;
              }
              uint32_t sym[2][4] = {};
#pragma unroll
              for (int q = 0; q < kPlanes; ++q) bytes::ld_n<true>(window(e, q) + c * C::kSyms, C::kSyms, sym[q]);
              uint32_t raw[2][2] = {};
#pragma unroll
              for (int r = 0; r < format::raw_subplanes(T); ++r)
                bytes::ld_n<true>(stage(e) + (r ? raw_window_bytes<T>(0) : 0) + c * split::raw_unit<T>(r),
                                  split::raw_unit<T>(r), raw[r]);
              C::merge(sym, raw, x);
              if (info[e].checksum) {
                const uint64_t off = gc * 16;
                uint64_t h = 0;
#pragma unroll
                for (int w = 0; w < 4; ++w) {
                  const uint64_t b = off + 4 * w;
                  const uint32_t keep = b + 4 <= nbytes ? 0xFFFFFFFFu : (1u << (8 * (nbytes - b))) - 1;
                  if (b < nbytes) h += format::mix64(((off / 4 + w) << 32) | (x[w] & keep));
                }
                atomicAdd(&hsum[e], static_cast<unsigned long long>(h));
              }
            }
          }
          f.add(r == 0, x);
        }
        uint32_t res[4];
        f.result(res);
        split::store_output<true>(p.out, nbytes, gc, res);
      }
      __syncthreads();
      // A block that ends here must have been consumed exactly.
      const uint64_t end = at + cnt;
      if (s.decoding && (!(end & ((uint64_t{1} << s.lb) - 1)) || end == p.count)) {
        bool closed = true;
#pragma unroll
        for (int q = 0; q < kPlanes; ++q) closed = closed && s.pl[q].closed();
        if (!closed) {
          s.decoding = false;
          if (lane == 0) scan::record_error(p.state, me, corrupt);
        }
      }
    }
  }
  // (The last window's barrier has made every thread's checksum additions visible.)
  if (tid < p.nstreams && info[tid].checksum && hsum[tid])
    atomicAdd(reinterpret_cast<unsigned long long*>(&p.state->checksum[tid]), hsum[tid]);
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
