// Inputs of the GPU reduce's tests (reduce_gpu_test, decode_fold_test): rank r's `count` elements
// of type t, a function of (t, r, i) alone.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/format.h"
#include "kernels/reduce.h"

namespace mpizip::kernels::test {

inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}


// Bytes of input r: mostly values of moderate magnitude, with special values mixed in (random bit
// patterns cover NaNs, infinities, zeros and subnormals of every type).
inline std::vector<uint8_t> input(format::DType t, int r, uint64_t count) {
  const size_t eb = format::elem_bytes(t);
  std::vector<uint8_t> v(count * eb);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = mix((uint64_t(r) << 40) + i + 1);
    uint64_t bits = h;
    if (h % 8 != 0) {  // a value near 1 in magnitude, either sign
      const float f = (h % 2 ? -1.0f : 1.0f) * (0.5f + static_cast<float>(h >> 40) / 16777216.0f);
      double d = f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      switch (t) {
        case format::DType::kBf16:
          bits = reduce::f32_to_bf16(f);
          break;
        case format::DType::kFp16:
          bits = reduce::f32_to_fp16(f);
          break;
        case format::DType::kFp32:
          bits = u;
          break;
        case format::DType::kE4m3:
          bits = reduce::f32_to_fp8<4, 3>(f);
          break;
        case format::DType::kE5m2:
          bits = reduce::f32_to_fp8<5, 2>(f);
          break;
        default:
          std::memcpy(&bits, &d, 8);
          break;
      }
    }
    std::memcpy(v.data() + i * eb, &bits, eb);
  }
  return v;
}

}  // namespace mpizip::kernels::test
