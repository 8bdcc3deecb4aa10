// The GPU reduce: the element-wise fold of P device buffers in rank order (kernels/reduce.h), bit
// for bit what the CPU reduce (kernels/reduce_cpu.h) computes. It reads every input once and writes
// the result once, 16 bytes per access where every buffer is 16-byte aligned.
//
// Stream-ordered and asynchronous, like the GPU codec: the work is enqueued on `stream` (a
// cudaStream_t / hipStream_t as void*) and the call returns at once. Nothing is allocated. This
// header is CUDA-free.
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::kernels::gpu {

// Most inputs of one reduce (the pointers travel in the kernel's parameters).
inline constexpr int kMaxReduceInputs = 64;

// out[i] = inputs[0][i] (op) ... (op) inputs[n_inputs - 1][i] for i in [0, count), folded in that
// order. `inputs` is a host array of `n_inputs` (1..kMaxReduceInputs) device pointers, read before
// the call returns; each input and `out` hold `count` elements of type `t` at element-aligned
// device addresses. `out` may be one of the inputs, but must not otherwise overlap them.
// `max_ctas` caps the CTAs the kernel occupies (0: as many as fill the GPU).
// kInvalidArgument for bad arguments, kDeviceError when the launch fails.
Status reduce(reduce::Type t, reduce::Op op, const void* const* inputs, int n_inputs, void* out,
              uint64_t count, int max_ctas, void* stream);

}  // namespace mpizip::kernels::gpu
