// Device side of the TMA engine (kernels/tma_engine.h): the PTX wrappers (bulk copies, mbarriers,
// system-scope flags) and the kernel. Included only by kernels/tma_engine.cu.
#pragma once

#include <cstdint>

#include "kernels/reduce.h"
#include "kernels/tma_engine.h"
#include "src/platform/gpu.h"

namespace mpizip::kernels::tma::detail {

inline constexpr int kThreads = 128;

// What the kernel receives: the launch, its segments reordered so that the ones the TMA path takes
// come first, and the first chunk of every segment.
struct Params {
  Segment seg[kMaxSegments];
  uint64_t first[kMaxSegments + 1];  // first[s]: number of chunks before segment s
  uint8_t aligned[kMaxSegments];     // every address of the segment is 16-byte aligned
  int nseg;
  int ntma;  // segments [0, ntma) take the TMA path
  int nsrc;
  int ctas;
  uint32_t chunk;
  int stages;
  uint64_t* signals;
  uint64_t* peer_signals[kMaxRanks];
  int rank;
  int nranks;
  uint64_t seq;
  uint64_t timeout_ns;
  uint64_t* result;
};

// One chunk: segment, byte offset in it, length.
struct Chunk {
  int s;
  uint64_t off;
  uint32_t len;
};

__device__ inline Chunk chunk_at(const Params& p, uint64_t g) {
  int s = 0;
  while (s + 1 < p.nseg && g >= p.first[s + 1]) ++s;
  Chunk c;
  c.s = s;
  c.off = (g - p.first[s]) * p.chunk;
  const uint64_t left = p.seg[s].bytes - c.off;
  c.len = static_cast<uint32_t>(left < p.chunk ? left : p.chunk);
  return c;
}

// ---- PTX: bulk copies, mbarriers, proxy fences, system-scope flags ------------------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MPIZIP_TMA_DEVICE 1
#endif

__device__ inline uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void mbar_init(uint64_t* bar, uint32_t count) {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
#endif
}

__device__ inline void mbar_init_fence() {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// Arrives on `bar` (count 1) and adds `bytes` to the transaction count its phase waits for.
__device__ inline void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
#endif
}

__device__ inline void mbar_wait(uint64_t* bar, uint32_t parity) {
#ifdef MPIZIP_TMA_DEVICE
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// Global -> shared, completing on `bar`. Addresses and size multiples of 16.
__device__ inline void bulk_load(void* smem_dst, const void* src, uint32_t bytes, uint64_t* bar) {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_u32(smem_dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
#endif
}

// Shared -> global, in the current bulk group.
__device__ inline void bulk_store(void* dst, const void* smem_src, uint32_t bytes) {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
               "r"(smem_u32(smem_src)), "r"(bytes)
               : "memory");
#endif
}

__device__ inline void bulk_commit() {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

// Waits until at most `n` bulk groups still read their shared-memory source (0 <= n <= 15).
__device__ inline void bulk_wait_read(int n) {
#ifdef MPIZIP_TMA_DEVICE
#define MPIZIP_WAIT_CASE(k) \
  case k:                   \
    asm volatile("cp.async.bulk.wait_group.read " #k ";" ::: "memory"); \
    break;
  switch (n) {
    MPIZIP_WAIT_CASE(1) MPIZIP_WAIT_CASE(2) MPIZIP_WAIT_CASE(3) MPIZIP_WAIT_CASE(4)
    MPIZIP_WAIT_CASE(5) MPIZIP_WAIT_CASE(6) MPIZIP_WAIT_CASE(7) MPIZIP_WAIT_CASE(8)
    MPIZIP_WAIT_CASE(9) MPIZIP_WAIT_CASE(10) MPIZIP_WAIT_CASE(11) MPIZIP_WAIT_CASE(12)
    MPIZIP_WAIT_CASE(13) MPIZIP_WAIT_CASE(14) MPIZIP_WAIT_CASE(15)
    default:
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
#undef MPIZIP_WAIT_CASE
#endif
}

// Waits until every bulk group has completed, its writes performed.
__device__ inline void bulk_wait_all() {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

// Orders this thread's generic-proxy accesses of shared memory before later async-proxy ones.
__device__ inline void fence_async_shared() {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ inline void fence_async_global() {
#ifdef MPIZIP_TMA_DEVICE
  asm volatile("fence.proxy.async.global;" ::: "memory");
#endif
}

__device__ inline void store_release_sys(uint64_t* p, uint64_t v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  __threadfence_system();
  *reinterpret_cast<volatile uint64_t*>(p) = v;
#endif
}

__device__ inline uint64_t load_acquire_sys(const uint64_t* p) {
  uint64_t v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#else
  v = *reinterpret_cast<const volatile uint64_t*>(p);
  __threadfence_system();
#endif
  return v;
}

// ---- The fold ------------------------------------------------------------------------------------

template <typename S>
struct alignas(16) Vec16 {
  S v[16 / sizeof(S)];
};

// One 16-byte vector of the result from the vectors `in(k)`, k = 0..nsrc-1, folded in that order.
template <reduce::Type T, reduce::Op O, typename Load>
__device__ inline uint4 fold_vec(int nsrc, Load in) {
  if constexpr (reduce::WordFold<T, O>::kWords) {  // 8/16-bit SUM and bitwise ops: a word at a time
    using W = reduce::WordFold<T, O>;
    uint4 acc = in(0);
    for (int k = 1; k < nsrc; ++k) {
      const uint4 x = in(k);
      acc = make_uint4(W::next(acc.x, x.x), W::next(acc.y, x.y), W::next(acc.z, x.z),
                       W::next(acc.w, x.w));
    }
    return acc;
  }
  using F = reduce::Fold<T, O>;
  using S = typename F::Storage;
  constexpr int V = 16 / sizeof(S);
  Vec16<S> x;
  *reinterpret_cast<uint4*>(x.v) = in(0);
  typename F::State acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = F::first(x.v[i]);
  for (int k = 1; k < nsrc; ++k) {
    *reinterpret_cast<uint4*>(x.v) = in(k);
#pragma unroll
    for (int i = 0; i < V; ++i) acc[i] = F::next(acc[i], x.v[i]);
  }
#pragma unroll
  for (int i = 0; i < V; ++i) x.v[i] = F::last(acc[i]);
  return *reinterpret_cast<const uint4*>(x.v);
}

// Bytes [from, c.len) of chunk `c`, by the threads with ordinary loads and stores, element by
// element (bytes for a copy).
template <reduce::Type T, reduce::Op O, bool kCopy>
__device__ inline void scalar_part(const Params& p, const Chunk& c, uint32_t from) {
  const Segment& s = p.seg[c.s];
  if constexpr (kCopy) {
    for (uint32_t i = from + threadIdx.x; i < c.len; i += blockDim.x) {
      const unsigned char v = static_cast<const unsigned char*>(s.src[0])[c.off + i];
      for (uint32_t k = 0; k < s.ndst; ++k) static_cast<unsigned char*>(s.dst[k])[c.off + i] = v;
    }
  } else {
    using F = reduce::Fold<T, O>;
    using S = typename F::Storage;
    const uint64_t e0 = c.off / sizeof(S);
    for (uint32_t e = from / sizeof(S) + threadIdx.x; e < c.len / sizeof(S); e += blockDim.x) {
      typename F::State acc = F::first(static_cast<const S*>(s.src[0])[e0 + e]);
      for (int k = 1; k < p.nsrc; ++k) acc = F::next(acc, static_cast<const S*>(s.src[k])[e0 + e]);
      const S r = F::last(acc);
      for (uint32_t k = 0; k < s.ndst; ++k) static_cast<S*>(s.dst[k])[e0 + e] = r;
    }
  }
}

// A chunk on the SM path: 16-byte loads and stores where the segment is aligned.
template <reduce::Type T, reduce::Op O, bool kCopy>
__device__ inline void sm_chunk(const Params& p, const Chunk& c) {
  const Segment& s = p.seg[c.s];
  uint32_t body = 0;
  if (p.aligned[c.s]) {
    body = c.len & ~15u;
    const uint64_t v0 = c.off / 16;
    for (uint32_t v = threadIdx.x; v < body / 16; v += blockDim.x) {
      uint4 r;
      if constexpr (kCopy) {
        r = static_cast<const uint4*>(s.src[0])[v0 + v];
      } else {
        r = fold_vec<T, O>(p.nsrc,
                           [&](int k) { return static_cast<const uint4*>(s.src[k])[v0 + v]; });
      }
      for (uint32_t k = 0; k < s.ndst; ++k) static_cast<uint4*>(s.dst[k])[v0 + v] = r;
    }
  }
  scalar_part<T, O, kCopy>(p, c, body);
}

// The TMA pipeline over this CTA's first `n` chunks (all in TMA segments).
template <reduce::Type T, reduce::Op O, bool kCopy>
__device__ inline void tma_pass(const Params& p, unsigned char* smem, uint64_t n) {
  const uint32_t C = p.chunk;
  const int nsrc = p.nsrc;
  const int D = p.stages / nsrc;   // slots of nsrc stages; the launcher guarantees D >= 2
  const int L = D / 2;             // chunks whose loads are in flight ahead of the fold
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + static_cast<size_t>(p.stages) * C);
  const uint64_t b = blockIdx.x;
  auto stage = [&](int slot, int k) { return smem + (static_cast<size_t>(slot) * nsrc + k) * C; };
  auto issue = [&](uint64_t j) {
    const Chunk c = chunk_at(p, b + j * p.ctas);
    const uint32_t body = c.len & ~15u;
    const int slot = static_cast<int>(j % D);
    mbar_expect_tx(&bars[slot], body * nsrc);
    if (body == 0) return;
    for (int k = 0; k < nsrc; ++k) {
      bulk_load(stage(slot, k), static_cast<const char*>(p.seg[c.s].src[k]) + c.off, body,
                &bars[slot]);
    }
  };
  if (threadIdx.x == 0) {
    for (int d = 0; d < D; ++d) mbar_init(&bars[d], 1);
    mbar_init_fence();
    for (uint64_t j = 0; j < n && j < static_cast<uint64_t>(L); ++j) issue(j);
  }
  __syncthreads();
  for (uint64_t i = 0; i < n; ++i) {
    const int slot = static_cast<int>(i % D);
    if (threadIdx.x == 0 && i + L < n) {
      // Chunk i + L takes the slot of chunk i + L - D, whose stores were committed D - L groups
      // ago: wait until they no longer read it.
      bulk_wait_read(D - L - 1);
      fence_async_shared();
      issue(i + L);
    }
    const Chunk c = chunk_at(p, b + i * p.ctas);
    const uint32_t body = c.len & ~15u;
    mbar_wait(&bars[slot], static_cast<uint32_t>((i / D) & 1));
    if constexpr (!kCopy) {
      unsigned char* s0 = stage(slot, 0);
      for (uint32_t v = threadIdx.x; v < body / 16; v += blockDim.x) {
        const uint4 r = fold_vec<T, O>(nsrc, [&](int k) {
          return reinterpret_cast<const uint4*>(s0 + static_cast<size_t>(k) * C)[v];
        });
        reinterpret_cast<uint4*>(s0)[v] = r;
      }
      fence_async_shared();
    }
    scalar_part<T, O, kCopy>(p, c, body);
    __syncthreads();
    if (threadIdx.x == 0) {
      const Segment& s = p.seg[c.s];
      if (body != 0) {
        for (uint32_t k = 0; k < s.ndst; ++k)
          bulk_store(static_cast<char*>(s.dst[k]) + c.off, stage(slot, 0), body);
      }
      bulk_commit();
    }
  }
  if (threadIdx.x == 0) bulk_wait_all();
}

// Nanoseconds of the GPU's global timer.
__device__ inline uint64_t now_ns() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return 0;
#endif
}

// This CTA stops waiting: every rank's barrier learns that this rank's part failed, and this rank's
// host how.
__device__ inline void give_up(const Params& p, uint64_t outcome) {
  for (int q = 0; q < p.nranks; ++q)
    store_release_sys(p.peer_signals[q] + kFaultSlot + p.rank, p.seq);
  if (p.result != nullptr) store_release_sys(p.result, p.seq * 4 + outcome);
}

// The end-of-collective barrier (thread 0 of each CTA; the CTA's writes are complete), bounded by
// p.timeout_ns and cut short by a peer's fault word (kernels/tma_engine.h).
__device__ inline void exit_barrier(const Params& p) {
  const int b = blockIdx.x;
  fence_async_global();
  __threadfence_system();
  for (int q = 0; q < p.nranks; ++q)
    store_release_sys(p.peer_signals[q] + p.rank * kMaxCtas + b, p.seq);
  const uint64_t start = now_ns();
  uint32_t spins = 0;
  for (int q = 0; q < p.nranks; ++q) {
    const uint64_t* slot = p.signals + q * kMaxCtas + b;
    while (load_acquire_sys(slot) < p.seq) {
      if ((++spins & 31) == 0) {
        for (int f = 0; f < p.nranks; ++f) {
          if (f != p.rank && load_acquire_sys(p.signals + kFaultSlot + f) >= p.seq) {
            give_up(p, kBarrierPeerFailed);
            return;
          }
        }
        if (now_ns() - start > p.timeout_ns) {
          give_up(p, kBarrierTimedOut);
          return;
        }
      }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
      __nanosleep(128);
#endif
    }
  }
}

template <reduce::Type T, reduce::Op O, bool kCopy>
__global__ void __launch_bounds__(kThreads, 1) engine_kernel(const MPIZIP_GRID_CONSTANT Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const uint64_t b = blockIdx.x;
  const uint64_t g_tma = p.first[p.ntma];
  const uint64_t g_all = p.first[p.nseg];
  const uint64_t n_tma = g_tma > b ? (g_tma - b + p.ctas - 1) / p.ctas : 0;
  const uint64_t n_all = g_all > b ? (g_all - b + p.ctas - 1) / p.ctas : 0;
  uint64_t done = 0;  // chunks the TMA pipeline took
#ifdef MPIZIP_TMA_DEVICE
  if (n_tma > 0) tma_pass<T, O, kCopy>(p, smem, n_tma);
  done = n_tma;
#endif
  for (uint64_t i = done; i < n_all; ++i) sm_chunk<T, O, kCopy>(p, chunk_at(p, b + i * p.ctas));
  if (p.signals != nullptr) {
    __syncthreads();
    if (threadIdx.x == 0) exit_barrier(p);
  }
}

}  // namespace mpizip::kernels::tma::detail
