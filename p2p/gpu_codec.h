// The GPU codec as the protocol uses it for device buffers: compress a device buffer into host
// bytes ready for the wire, and decode host bytes from the wire straight into a device buffer.
// One process-wide context (stream, device scratch, workspace, pinned result word), grown on
// demand and serialised by a mutex. Builds without CUDA answer kUnsupported, and the protocol then
// stages raw bytes and uses the CPU codec.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/format.h"
#include "src/platform/status.h"

namespace mpizip::p2p {

// Compresses `count` elements at device pointer `src` into `out` (host). kUnsupported without a GPU
// codec; a codec error as its status.
Status gpu_compress(format::DType t, const void* src, uint64_t count, bool checksum,
                    std::vector<uint8_t>* out);

// Decodes the stream `stream` (`bytes` bytes, host memory) into device pointer `dst`, which holds
// `capacity` bytes. kTruncated when the data does not fit (the first `capacity` bytes are written);
// kCorruptStream / kTypeMismatch from the decoder.
Status gpu_decompress(format::DType t, const uint8_t* stream, uint64_t bytes, void* dst,
                      uint64_t capacity, uint64_t* count);

}  // namespace mpizip::p2p
