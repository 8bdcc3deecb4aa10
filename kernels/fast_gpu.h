// The GPU codec's fast mode (docs/FORMAT.md, "Fast streams"), as the launchers of
// kernels/codec_gpu.cu call it: compress() with EncodeOptions::mode = kModeFast and decompress()
// with DecodeOptions::mode = kModeFast land here. Kernels in kernels/fast_gpu.cuh, instantiated in
// kernels/fast_gpu.cu. CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/codec_gpu.h"

namespace mpizip::kernels::gpu::fast {

// state: the workspace's launch state (scan::State); entries: its look-back entries, room for
// entries_cap of them (one per chunk of format::fast_chunks).
Status compress(format::DType t, const void* src, uint64_t count, void* dst, uint64_t dst_capacity, void* state,
                uint64_t* entries, uint64_t entries_cap, DeviceResult* result, bool checksum, int max_ctas,
                void* stream);
Status decompress(format::DType t, const void* src, uint64_t src_bytes, void* dst, uint64_t dst_capacity,
                  void* state, DeviceResult* result, int max_ctas, void* stream);

}  // namespace mpizip::kernels::gpu::fast
