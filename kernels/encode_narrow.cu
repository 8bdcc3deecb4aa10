// The encoder's shared-memory instantiation encode::kNarrow, the narrow one (128 registers): its kernels in a
// translation unit of their own (kernels/encode_kernels.cuh).
#include "kernels/encode_kernels.cuh"

namespace mpizip::kernels::gpu::launch {

const void* encode_narrow_kernel(DType t, bool fused, bool aligned) {
#if MPIZIP_ENC_CAPS
  return pick_smem_kernel<encode::kNarrow>(t, fused, aligned);
#else
  return encode_wide_kernel(t, fused, aligned);
#endif
}

}  // namespace mpizip::kernels::gpu::launch
