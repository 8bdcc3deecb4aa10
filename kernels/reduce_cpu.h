// The CPU reduce: the element-wise fold of P host buffers in rank order (kernels/reduce.h), bit for
// bit what the GPU reduce (kernels/reduce_gpu.h) computes. Thread-safe, allocation-free.
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/status.h"

namespace mpizip::kernels::cpu {

// out[i] = inputs[0][i] (op) inputs[1][i] (op) ... (op) inputs[n_inputs - 1][i], folded in that
// order, for i in [0, count). Each input and `out` holds `count` elements of type `t`, at any
// element-aligned address; `out` may be one of the inputs (every element's inputs are read before
// it is written), but must not otherwise overlap them. kInvalidArgument for a pair of type and op
// that kernels/reduce.h does not reduce (reduce::valid), n_inputs < 1, or null pointers with
// count > 0.
Status reduce(reduce::Type t, reduce::Op op, const void* const* inputs, int n_inputs, void* out,
              uint64_t count);

}  // namespace mpizip::kernels::cpu
