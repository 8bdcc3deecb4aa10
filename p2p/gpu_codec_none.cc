// p2p/gpu_codec.h for builds without the GPU codec: every job is refused with kUnsupported.
#include "p2p/gpu_codec.h"

namespace mpizip::p2p {

GpuJob::~GpuJob() = default;
Status GpuJob::raw_ready(bool*) { return Status::kUnsupported; }
Status GpuJob::done(bool*) { return Status::kUnsupported; }
Status GpuJob::result() const { return Status::kUnsupported; }
uint64_t GpuJob::size() const { return 0; }

uint64_t gpu_split_bytes(format::DType, uint64_t) { return 0; }

Status gpu_start_compress(format::DType, const void*, uint64_t, bool, bool, GpuJob*) {
  return Status::kUnsupported;
}

Status gpu_start_decompress(format::DType, const void*, uint64_t, uint64_t, void*, uint64_t,
                            GpuJob*) {
  return Status::kUnsupported;
}

}  // namespace mpizip::p2p
