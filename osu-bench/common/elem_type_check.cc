// Checks the fp32 casts against values fixed by the formats and by CUDA's conversions
// (__float2bfloat16_rn, __float2half_rn, __nv_cvt_float_to_fp8 with __NV_SATFINITE): ties to
// even, subnormals, overflow, infinities, NaN and signed zero. Exits 1 on any mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "osu-bench/common/elem_type.h"

namespace {

int failures = 0;

void expect(const char* what, float x, unsigned got, unsigned want) {
  if (got == want) return;
  std::printf("FAIL %s(%a): got 0x%x, want 0x%x\n", what, double(x), got, want);
  ++failures;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void check_bf16() {
  using osub::float_to_bf16;
  expect("bf16", 1.0f, float_to_bf16(1.0f), 0x3f80);
  expect("bf16", -2.0f, float_to_bf16(-2.0f), 0xc000);
  expect("bf16", 0x1.01p0f, float_to_bf16(0x1.01p0f), 0x3f80);              // tie, even stays
  expect("bf16", 0x1.03p0f, float_to_bf16(0x1.03p0f), 0x3f82);              // tie, odd rounds up
  expect("bf16", 0x1.0101p0f, float_to_bf16(0x1.0101p0f), 0x3f81);          // above the tie
  expect("bf16", 0x1.fffffep127f, float_to_bf16(0x1.fffffep127f), 0x7f80);  // overflows to inf
  expect("bf16", -kInf, float_to_bf16(-kInf), 0xff80);
  expect("bf16", kNaN, float_to_bf16(kNaN), 0x7fff);
  expect("bf16", -0.0f, float_to_bf16(-0.0f), 0x8000);
  expect("bf16", 0x1p-133f, float_to_bf16(0x1p-133f), 0x0001);  // smallest subnormal
}

void check_fp16() {
  using osub::float_to_fp16;
  expect("fp16", 1.0f, float_to_fp16(1.0f), 0x3c00);
  expect("fp16", 65504.0f, float_to_fp16(65504.0f), 0x7bff);
  expect("fp16", 65519.0f, float_to_fp16(65519.0f), 0x7bff);
  expect("fp16", 65520.0f, float_to_fp16(65520.0f), 0x7c00);          // tie above max: inf
  expect("fp16", 0x1p-24f, float_to_fp16(0x1p-24f), 0x0001);          // smallest subnormal
  expect("fp16", 0x1p-25f, float_to_fp16(0x1p-25f), 0x0000);          // tie: to even, zero
  expect("fp16", 0x1.8p-24f, float_to_fp16(0x1.8p-24f), 0x0002);      // tie: to even, 2
  expect("fp16", 0x1.ffcp-15f, float_to_fp16(0x1.ffcp-15f), 0x0400);  // rounds up to min normal
  expect("fp16", kNaN, float_to_fp16(kNaN), 0x7fff);
  expect("fp16", -0.0f, float_to_fp16(-0.0f), 0x8000);
}

void check_fp8() {
  using osub::float_to_fp8e4m3;
  using osub::float_to_fp8e5m2;
  expect("e4m3", 1.0f, float_to_fp8e4m3(1.0f), 0x38);
  expect("e4m3", 448.0f, float_to_fp8e4m3(448.0f), 0x7e);
  expect("e4m3", 464.0f, float_to_fp8e4m3(464.0f), 0x7e);  // saturates, never NaN
  expect("e4m3", 1e9f, float_to_fp8e4m3(1e9f), 0x7e);
  expect("e4m3", -kInf, float_to_fp8e4m3(-kInf), 0xfe);
  expect("e4m3", kNaN, float_to_fp8e4m3(kNaN), 0x7f);
  expect("e4m3", 0x1p-9f, float_to_fp8e4m3(0x1p-9f), 0x01);    // smallest subnormal
  expect("e4m3", 0x1p-10f, float_to_fp8e4m3(0x1p-10f), 0x00);  // tie: to even, zero
  expect("e4m3", 0x1.1p0f, float_to_fp8e4m3(0x1.1p0f), 0x38);  // tie: to even
  expect("e4m3", 0x1.3p0f, float_to_fp8e4m3(0x1.3p0f), 0x3a);  // tie: to even, up
  expect("e4m3", -0.0f, float_to_fp8e4m3(-0.0f), 0x80);
  expect("e5m2", 1.0f, float_to_fp8e5m2(1.0f), 0x3c);
  expect("e5m2", 57344.0f, float_to_fp8e5m2(57344.0f), 0x7b);
  expect("e5m2", 61440.0f, float_to_fp8e5m2(61440.0f), 0x7b);
  expect("e5m2", kInf, float_to_fp8e5m2(kInf), 0x7b);
  expect("e5m2", kNaN, float_to_fp8e5m2(kNaN), 0x7f);
  expect("e5m2", 0x1p-16f, float_to_fp8e5m2(0x1p-16f), 0x01);
  expect("e5m2", -0x1.2p0f, float_to_fp8e5m2(-0x1.2p0f), 0xbc);  // tie: to even
}

}  // namespace

int main() {
  check_bf16();
  check_fp16();
  check_fp8();
  if (failures == 0) std::printf("PASS: element type casts\n");
  return failures ? 1 : 0;
}
