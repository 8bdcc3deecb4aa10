// Host side of the TMA engine (kernels/tma_engine.h): checks a launch, orders its segments (those
// the TMA path can take first), picks the kernel instantiation for the element type and op (the one
// switch over them), and launches it.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "kernels/tma_engine.cuh"
#include "kernels/tma_engine.h"
#include "src/platform/gpu.h"

namespace mpizip::kernels::tma {

using format::DType;
using reduce::Op;

namespace {

constexpr uint64_t kMaxSmem = 200 * 1024;

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

bool segment_aligned(const Segment& s) {
  for (uint32_t k = 0; k < s.nsrc; ++k)
    if (!aligned16(s.src[k])) return false;
  for (uint32_t k = 0; k < s.ndst; ++k)
    if (!aligned16(s.dst[k])) return false;
  return true;
}

// Raises a kernel's dynamic shared-memory limit once per instantiation.
template <reduce::Type T, Op O, bool kCopy>
Status launch_kernel(const detail::Params& p, uint64_t smem, gpuStream_t stream) {
  const void* k = reinterpret_cast<const void*>(detail::engine_kernel<T, O, kCopy>);
  static std::once_flag once;
  static gpuError_t attr = gpuSuccess;
  std::call_once(once, [&] {
    attr = gpuFuncSetAttribute(k, gpuFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kMaxSmem));
  });
  MPIZIP_GPU_CHECK(attr);
  detail::Params copy = p;
  void* args[] = {&copy};
  MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(static_cast<unsigned>(p.ctas)), dim3(detail::kThreads),
                                   args, static_cast<size_t>(smem), stream));
  return Status::kOk;
}

Status dispatch(reduce::Type t, Op op, const detail::Params& p, uint64_t smem, gpuStream_t s) {
  if (p.nsrc == 1) return launch_kernel<reduce::Type::kFp32, Op::kSum, true>(p, smem, s);
  return reduce::dispatch(t, op, [&](auto type, auto o) {
    return launch_kernel<decltype(type)::value, decltype(o)::value, false>(p, smem, s);
  });
}

int current_device() {
  int dev = -1;
  if (gpuGetDevice(&dev) != gpuSuccess) return -1;
  return dev;
}

}  // namespace

bool tma_capable() {
#if defined(MPIZIP_HIP) || defined(__HIPCC__)
  return false;
#else
  const int dev = current_device();
  if (dev < 0) return false;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
    return false;
  return major >= 9;
#endif
}

Status engine_stream(void** out) {
  static std::mutex mu;
  static std::unordered_map<int, gpuStream_t> streams;
  const int dev = current_device();
  if (dev < 0) return Status::kNoDevice;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(dev);
  if (it == streams.end()) {
    gpuStream_t s = nullptr;
    MPIZIP_GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamDefault));
    it = streams.emplace(dev, s).first;
  }
  *out = it->second;
  return Status::kOk;
}

static Status resolve(void** stream) {
  if (*stream == nullptr) MPIZIP_CHECK(engine_stream(stream));
  return Status::kOk;
}

Status sync(void* stream) {
  MPIZIP_CHECK(resolve(&stream));
  MPIZIP_GPU_CHECK(gpuStreamSynchronize(static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

Status copy_async(void* dst, const void* src, uint64_t bytes, void* stream) {
  if (bytes == 0) return Status::kOk;
  MPIZIP_CHECK(resolve(&stream));
  MPIZIP_GPU_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault,
                                  static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

Status zero_async(void* dst, uint64_t bytes, void* stream) {
  if (bytes == 0) return Status::kOk;
  MPIZIP_CHECK(resolve(&stream));
  MPIZIP_GPU_CHECK(gpuMemsetAsync(dst, 0, bytes, static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

Status run(const Launch& l, void* stream) {
  if (l.nseg < 0 || l.nseg > kMaxSegments || l.ctas < 1 || l.ctas > kMaxCtas ||
      l.chunk_bytes < 16 || l.chunk_bytes % 16 != 0 || l.chunk_bytes > 65536 || l.stages < 2 ||
      l.nranks < 1 || l.nranks > kMaxRanks || l.rank < 0 || l.rank >= l.nranks)
    return Status::kInvalidArgument;
  detail::Params p{};
  p.ctas = l.ctas;
  p.chunk = l.chunk_bytes;
  p.stages = l.stages;
  p.signals = l.signals;
  p.rank = l.rank;
  p.nranks = l.nranks;
  p.seq = l.seq;
  p.timeout_ns = l.timeout_ns;
  p.result = l.result;
  for (int q = 0; q < kMaxRanks; ++q) p.peer_signals[q] = l.peer_signals[q];
  if (l.signals != nullptr) {
    for (int q = 0; q < l.nranks; ++q)
      if (l.peer_signals[q] == nullptr) return Status::kInvalidArgument;
  }
  // Segments: non-empty ones only, those the TMA path takes first.
  const bool tma = l.path == Path::kTma && tma_capable();
  int nsrc = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < l.nseg; ++i) {
      const Segment& s = l.seg[i];
      if (s.bytes == 0) continue;
      if (s.nsrc < 1 || s.nsrc > kMaxRanks || s.ndst < 1 || s.ndst > kMaxRanks)
        return Status::kInvalidArgument;
      if (nsrc != 0 && static_cast<int>(s.nsrc) != nsrc) return Status::kInvalidArgument;
      nsrc = static_cast<int>(s.nsrc);
      const bool al = segment_aligned(s);
      const bool takes_tma = tma && al;
      if (takes_tma != (pass == 0)) continue;
      p.seg[p.nseg] = s;
      p.aligned[p.nseg] = al;
      if (takes_tma) ++p.ntma;
      ++p.nseg;
    }
  }
  p.nsrc = std::max(nsrc, 1);
  if (p.nsrc > 1 && !reduce::valid(l.type, l.op)) return Status::kInvalidArgument;
  for (int i = 0; i < p.nseg; ++i) {
    p.first[i + 1] = p.first[i] + (p.seg[i].bytes + p.chunk - 1) / p.chunk;
  }
  if (p.nseg == 0) p.first[0] = 0;
  uint64_t smem = 0;
  if (p.ntma > 0) {
    if (p.stages / p.nsrc < 2) return Status::kInvalidArgument;
    smem = static_cast<uint64_t>(p.stages) * p.chunk + static_cast<uint64_t>(p.stages) * 8;
    if (smem > kMaxSmem) return Status::kInvalidArgument;
  }
  MPIZIP_CHECK(resolve(&stream));
  return dispatch(l.type, l.op, p, smem, static_cast<gpuStream_t>(stream));
}

}  // namespace mpizip::kernels::tma
