// The encoder's shared-memory instantiation encode::kWide, the wide one (184 registers): its kernels in a
// translation unit of their own (kernels/encode_kernels.cuh).
#include "kernels/encode_kernels.cuh"

namespace mpizip::kernels::gpu::launch {

const void* encode_wide_kernel(DType t, bool fused, bool aligned) {
  return pick_smem_kernel<encode::kWide>(t, fused, aligned);
}

}  // namespace mpizip::kernels::gpu::launch
