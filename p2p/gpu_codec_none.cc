// p2p/gpu_codec.h for builds without the GPU codec.
#include "p2p/gpu_codec.h"

namespace mpizip::p2p {

Status gpu_compress(format::DType, const void*, uint64_t, bool, std::vector<uint8_t>*) {
  return Status::kUnsupported;
}

Status gpu_decompress(format::DType, const uint8_t*, uint64_t, void*, uint64_t, uint64_t*) {
  return Status::kUnsupported;
}

}  // namespace mpizip::p2p
