// The encoder's shared-memory instantiation encode::kMid, the middle one (168 registers): its kernels in a
// translation unit of their own (kernels/encode_kernels.cuh).
#include "kernels/encode_kernels.cuh"

namespace mpizip::kernels::gpu::launch {

const void* encode_mid_kernel(DType t, bool fused, bool aligned) {
#if MPIZIP_ENC_CAPS
  return pick_smem_kernel<encode::kMid>(t, fused, aligned);
#else
  return encode_wide_kernel(t, fused, aligned);
#endif
}

}  // namespace mpizip::kernels::gpu::launch
