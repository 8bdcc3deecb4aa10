// Host side of the GPU reduce (kernels/reduce_gpu.h) and its kernel: one thread folds 16 bytes of
// every input at a time, in rank order, and writes 16 bytes of the result.
#include "kernels/reduce_gpu.h"

#include <algorithm>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "src/platform/gpu.h"

namespace mpizip::kernels::gpu {

using format::DType;

namespace {

constexpr int kThreads = 256;
constexpr int kCtasPerSm =
    8;  // enough resident threads to keep every multiprocessor's loads in flight

struct ReduceParams {
  const void* in[kMaxReduceInputs];
  void* out;
  uint64_t count;
  int n;
};

// 16 bytes of elements, aligned so that they load and store as one uint4.
template <typename S, int V>
struct Vec {
  alignas(16) S v[V];
};

template <reduce::Type T, reduce::Op O, bool kVec>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(const MPIZIP_GRID_CONSTANT ReduceParams p) {
  using F = reduce::Fold<T, O>;
  using S = typename F::Storage;
  constexpr int V = 16 / sizeof(S);
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const uint64_t tid = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  uint64_t done = 0;  // elements the vector loop covers
  if constexpr (kVec) {
    const uint64_t nvec = p.count / V;
    done = nvec * V;
    for (uint64_t k = tid; k < nvec; k += stride) {
      typename F::State acc[V];
      Vec<S, V> x;
      *reinterpret_cast<uint4*>(x.v) = static_cast<const uint4*>(p.in[0])[k];
#pragma unroll
      for (int i = 0; i < V; ++i) acc[i] = F::first(x.v[i]);
      for (int r = 1; r < p.n; ++r) {
        *reinterpret_cast<uint4*>(x.v) = static_cast<const uint4*>(p.in[r])[k];
#pragma unroll
        for (int i = 0; i < V; ++i) acc[i] = F::next(acc[i], x.v[i]);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) x.v[i] = F::last(acc[i]);
      static_cast<uint4*>(p.out)[k] = *reinterpret_cast<const uint4*>(x.v);
    }
  }
  for (uint64_t e = done + tid; e < p.count; e += stride) {
    typename F::State acc = F::first(static_cast<const S*>(p.in[0])[e]);
    for (int r = 1; r < p.n; ++r) acc = F::next(acc, static_cast<const S*>(p.in[r])[e]);
    static_cast<S*>(p.out)[e] = F::last(acc);
  }
}

// Multiprocessors of the current device, probed once per device.
Status multiprocessors(int* out) {
  static std::mutex mu;
  static std::unordered_map<int, int> cache;
  int dev = 0;
  MPIZIP_GPU_CHECK(gpuGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(dev); it != cache.end()) {
    *out = it->second;
    return Status::kOk;
  }
  int sms = 0;
  MPIZIP_GPU_CHECK(gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, dev));
  *out = cache[dev] = std::max(1, sms);
  return Status::kOk;
}

template <reduce::Type T, reduce::Op O>
Status launch(const ReduceParams& p, bool vec, int max_ctas, void* stream) {
  using S = typename reduce::Fold<T, O>::Storage;
  constexpr uint64_t V = 16 / sizeof(S);
  int sms = 0;
  MPIZIP_CHECK(multiprocessors(&sms));
  const uint64_t work = vec ? p.count / V + p.count % V : p.count;
  uint64_t grid = std::min<uint64_t>((work + kThreads - 1) / kThreads, uint64_t(sms) * kCtasPerSm);
  if (max_ctas > 0) grid = std::min<uint64_t>(grid, uint64_t(max_ctas));
  const void* k =
      vec ? (const void*)reduce_kernel<T, O, true> : (const void*)reduce_kernel<T, O, false>;
  ReduceParams copy = p;
  void* args[] = {&copy};
  MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(static_cast<unsigned>(std::max<uint64_t>(grid, 1))),
                                   dim3(kThreads), args, 0, static_cast<gpuStream_t>(stream)));
  return Status::kOk;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

Status reduce(reduce::Type t, reduce::Op op, const void* const* inputs, int n_inputs, void* out,
              uint64_t count, int max_ctas, void* stream) {
  if (inputs == nullptr || n_inputs < 1 || n_inputs > kMaxReduceInputs || max_ctas < 0 ||
      !reduce::valid(t, op))
    return Status::kInvalidArgument;
  if (count == 0) return Status::kOk;
  if (out == nullptr) return Status::kInvalidArgument;
  ReduceParams p{};
  p.out = out;
  p.count = count;
  p.n = n_inputs;
  bool vec = aligned16(out);
  for (int r = 0; r < n_inputs; ++r) {
    if (inputs[r] == nullptr) return Status::kInvalidArgument;
    p.in[r] = inputs[r];
    vec = vec && aligned16(inputs[r]);
  }
  return reduce::dispatch(t, op, [&](auto type, auto o) {
    return launch<decltype(type)::value, decltype(o)::value>(p, vec, max_ctas, stream);
  });
}

}  // namespace mpizip::kernels::gpu
