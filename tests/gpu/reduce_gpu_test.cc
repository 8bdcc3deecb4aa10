// The GPU reduce (kernels/reduce_gpu.h) against the CPU reduce (kernels/reduce_cpu.h): bit for bit
// on every type and op, with NaNs, infinities, signed zeros and subnormals in the data, 2 to 64
// inputs, aligned and unaligned buffers, vector tails, and in place. Exits 77 (skipped) without a
// GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/reduce_cpu.h"
#include "kernels/reduce_gpu.h"
#include "tests/gpu/reduce_inputs.h"

namespace mpizip::kernels {
namespace {

using format::DType;
using reduce::Op;
using test::input;

void check(DType t, Op op, int n, uint64_t count, size_t misalign, bool in_place) {
  SCOPED_TRACE(testing::Message() << "dtype " << int(t) << " op " << int(op) << " inputs " << n
                                  << " count " << count << " misalign " << misalign
                                  << (in_place ? " in place" : ""));
  const size_t eb = format::elem_bytes(t), bytes = count * eb;
  std::vector<std::vector<uint8_t>> host;
  std::vector<const void*> cpu_in, gpu_in;
  std::vector<void*> dev;
  for (int r = 0; r < n; ++r) {
    host.push_back(input(t, r, count));
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, bytes + 64), cudaSuccess);
    dev.push_back(d);
    uint8_t* at = static_cast<uint8_t*>(d) + misalign * eb;
    ASSERT_EQ(cudaMemcpy(at, host[r].data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    cpu_in.push_back(host[r].data());
    gpu_in.push_back(at);
  }
  std::vector<uint8_t> want(bytes);
  ASSERT_EQ(cpu::reduce(reduce::type_of(t), op, cpu_in.data(), n, want.data(), count), Status::kOk);
  void* out_buf = nullptr;
  ASSERT_EQ(cudaMalloc(&out_buf, bytes + 64), cudaSuccess);
  uint8_t* out = in_place ? const_cast<uint8_t*>(static_cast<const uint8_t*>(gpu_in[0]))
                          : static_cast<uint8_t*>(out_buf) + misalign * eb;
  ASSERT_EQ(gpu::reduce(reduce::type_of(t), op, gpu_in.data(), n, out, count, 0, nullptr), Status::kOk);
  std::vector<uint8_t> got(bytes);
  ASSERT_EQ(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(got == want);
  for (void* d : dev) cudaFree(d);
  cudaFree(out_buf);
}

TEST(ReduceGpu, MatchesTheCpuBitForBit) {
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64, DType::kE4m3, DType::kE5m2}) {
    for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax}) {
      for (int n : {2, 3, 8, 64}) check(t, op, n, 100003, 0, false);
      check(t, op, 4, 1, 0, false);
      check(t, op, 4, 17, 1, false);    // unaligned: the element path
      check(t, op, 5, 65537, 0, true);  // in place over the first input
    }
  }
}

// The integer and pair types under every op MPI defines on them: random bits (pairs with few
// distinct values, so that MINLOC and MAXLOC meet ties), the GPU's bits against the CPU's.
TEST(ReduceGpu, IntegersAndPairsMatchTheCpu) {
  using reduce::Type;
  const Type types[] = {Type::kI8,  Type::kU8,  Type::kI16, Type::kU16,      Type::kI32,
                        Type::kU32, Type::kI64, Type::kU64, Type::kFloatInt, Type::kDoubleInt,
                        Type::kLongInt, Type::k2Int, Type::kShortInt};
  int checked = 0;
  for (Type t : types) {
    for (int o = 1; o <= 12; ++o) {
      const Op op = static_cast<Op>(o);
      if (!reduce::valid(t, op)) continue;
      const uint64_t eb = reduce::type_bytes(t);
      for (uint64_t count : {uint64_t{1}, uint64_t{17}, uint64_t{100003}}) {
        const int n = 5;
        std::vector<std::vector<uint8_t>> host(n, std::vector<uint8_t>(count * eb));
        uint64_t x = 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(t) * 16 + o) + count;
        for (auto& h : host)
          for (size_t i = 0; i < h.size(); ++i) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            h[i] = static_cast<uint8_t>(reduce::is_pair(t) && (i % eb) < 4 ? (x % 3) : x);
          }
        std::vector<const void*> cpu_in, gpu_in;
        std::vector<void*> dev;
        for (auto& h : host) {
          void* d = nullptr;
          ASSERT_EQ(cudaMalloc(&d, h.size()), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
          dev.push_back(d);
          cpu_in.push_back(h.data());
          gpu_in.push_back(d);
        }
        std::vector<uint8_t> want(count * eb), got(count * eb);
        ASSERT_EQ(cpu::reduce(t, op, cpu_in.data(), n, want.data(), count), Status::kOk);
        void* out = nullptr;
        ASSERT_EQ(cudaMalloc(&out, want.size()), cudaSuccess);
        ASSERT_EQ(gpu::reduce(t, op, gpu_in.data(), n, out, count, 0, nullptr), Status::kOk);
        ASSERT_EQ(cudaMemcpy(got.data(), out, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_TRUE(got == want) << "type " << int(t) << " op " << o << " count " << count;
        cudaFree(out);
        for (void* d : dev) cudaFree(d);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 3 * (8 * 10 + 5 * 2));
}

TEST(ReduceGpu, RejectsBadArguments) {
  const void* in[1] = {nullptr};
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  in[0] = d;
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 0, d, 4, 0, nullptr), Status::kInvalidArgument);
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 65, d, 4, 0, nullptr),
            Status::kInvalidArgument);
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kE5m2), Op::kBand, in, 1, d, 4, 0, nullptr), Status::kInvalidArgument);
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kFp32), static_cast<Op>(0), in, 1, d, 4, 0, nullptr),
            Status::kInvalidArgument);
  cudaFree(d);
}

}  // namespace
}  // namespace mpizip::kernels

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
