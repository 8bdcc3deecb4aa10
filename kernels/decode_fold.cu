// Host side of decoding fused with the reduce (kernels/codec_gpu.h, decode_fold) and its kernels:
// one instantiation per element type, stream count (a CTA has a group per stream) and op.
#include <algorithm>
#include <type_traits>

#include "kernels/codec_gpu.h"
#include "kernels/decode_fold.cuh"
#include "kernels/launch.h"

namespace mpizip::kernels::gpu {

using format::DType;
using reduce::Op;
using namespace launch;

namespace {

template <DType T, int kS, Op O>
__global__ void __launch_bounds__(kS * lanes::kLanes, fold::min_ctas<T, kS>())
    fold_kernel(const MPIZIP_GRID_CONSTANT fold::Params p) {
  extern __shared__ uint4 smem[];
  fold::run<T, kS, O>(p, reinterpret_cast<uint8_t*>(smem));
}

static_assert(kMaxFoldStreams == 3, "one instantiation per stream count");

template <DType T, Op O>
const void* kernel_for(int streams) {
  switch (streams) {
    case 2: return (const void*)fold_kernel<T, 2, O>;
    case 3: return (const void*)fold_kernel<T, 3, O>;
    default: return (const void*)fold_kernel<T, 1, O>;
  }
}

}  // namespace

bool fold_fusable(const FoldInput* inputs, int n, const void* out) {
  if (!inputs || n < 1 || n > fold::kMaxInputs || !aligned16(out)) return false;
  int streams = 0;
  for (int r = 0; r < n; ++r) {
    if (!aligned16(inputs[r].src)) return false;
    streams += inputs[r].stream_bytes > 0;
  }
  return streams <= kMaxFoldStreams;
}

Status decode_fold(DType t, Op op, const FoldInput* inputs, int n, void* out, uint64_t count, void* workspace,
                   uint64_t workspace_bytes, DeviceResult* results, void* stream) {
  if (!fold_fusable(inputs, n, out) || !out || !workspace || !aligned16(workspace) ||
      workspace_bytes < scan::kStateBytes || !reduce::dtype_reducible(t) || !reduce::valid(reduce::type_of(t), op) ||
      count > (uint64_t{1} << 58))
    return Status::kInvalidArgument;
  if (!fold_decodes(t)) return Status::kUnsupported;
  static_assert(sizeof(fold::Params) <= 4096, "kernel parameters fit the launch limit");
  fold::Params p{};
  p.n = n;
  p.out = static_cast<uint8_t*>(out);
  p.count = count;
  p.state = static_cast<scan::State*>(workspace);
  p.results = results;
  for (int r = 0; r < n; ++r) {
    if (!inputs[r].src) return Status::kInvalidArgument;
    p.src[r] = static_cast<const uint8_t*>(inputs[r].src);
    p.bytes[r] = inputs[r].stream_bytes;
    p.slot[r] = -1;
    if (inputs[r].stream_bytes) {
      p.slot[r] = static_cast<int8_t>(p.nstreams);
      p.stream_input[p.nstreams++] = r;
    }
  }
  if (p.nstreams > 0 && !results) return Status::kInvalidArgument;
  return reduce::dispatch<reduce::Types::kFloats>(reduce::type_of(t), op, [&](auto type, auto o) -> Status {
    constexpr DType T = static_cast<DType>(decltype(type)::value);
    constexpr Op O = decltype(o)::value;
    const int ks = std::max(1, p.nstreams);
    const void* k = kernel_for<T, O>(ks);
    const int threads = ks * lanes::kLanes;
    const uint32_t smem = static_cast<uint32_t>(ks) * fold::slot_smem_bytes<T>();
    int resident = 0;
    MPIZIP_CHECK(resident_ctas(k, threads, smem, smem, &resident));
    // Work units are blocks of the largest block size a stream has, unknown to the host: the
    // grid covers the smallest, and CTAs stride over the units.
    const uint64_t units = (count + (uint64_t{1} << format::kMinLog2Block) - 1) >> format::kMinLog2Block;
    const int grid = grid_for(units, resident, 0);
    void* args[] = {&p};
    MPIZIP_GPU_CHECK(gpuLaunchKernel(k, dim3(grid), dim3(threads), args, smem, static_cast<gpuStream_t>(stream)));
    return Status::kOk;
  });
}

}  // namespace mpizip::kernels::gpu
