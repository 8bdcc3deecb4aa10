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
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64}) {
    for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax}) {
      for (int n : {2, 3, 8, 64}) check(t, op, n, 100003, 0, false);
      check(t, op, 4, 1, 0, false);
      check(t, op, 4, 17, 1, false);    // unaligned: the element path
      check(t, op, 5, 65537, 0, true);  // in place over the first input
    }
  }
}

TEST(ReduceGpu, RejectsBadArguments) {
  const void* in[1] = {nullptr};
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  in[0] = d;
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 0, d, 4, 0, nullptr), Status::kInvalidArgument);
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 65, d, 4, 0, nullptr),
            Status::kInvalidArgument);
  EXPECT_EQ(gpu::reduce(reduce::type_of(DType::kE5m2), Op::kSum, in, 1, d, 4, 0, nullptr), Status::kInvalidArgument);
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
