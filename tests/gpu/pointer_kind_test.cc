// The per-thread cache of where buffers live (src/platform/pointer_kind.cc), on a GPU: its answers
// equal the runtime's for every kind of memory, and every allocation call that adds an address
// range to the process changes the address-space generation that keeps the cache valid (the
// premise of the cache: a GPU driver maps new memory through the C library). Exits 77 without a
// GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/platform/device.h"

namespace mpizip::platform {
namespace {

using Range = std::pair<uintptr_t, uintptr_t>;

// The address ranges mapped in this process now (/proc/self/maps).
std::vector<Range> mapped_ranges() {
  std::vector<Range> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) out.emplace_back(lo, hi);
  }
  return out;
}

bool inside(const std::vector<Range>& ranges, const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (const auto& [lo, hi] : ranges) {
    if (a >= lo && a < hi) return true;
  }
  return false;
}

// Allocates with `alloc`; if the new memory lies in a range that was not mapped before the call,
// the generation must have moved. Returns the pointer.
template <typename Alloc>
void* checked_alloc(const char* what, Alloc alloc) {
  const auto before = mapped_ranges();
  const uint64_t gen = address_space_generation();
  void* p = alloc();
  if (p == nullptr) return nullptr;
  if (!inside(before, p)) {
    EXPECT_NE(address_space_generation(), gen)
        << what << ": new address range at " << p << " without a counted mapping call";
  }
  return p;
}

void expect_answers(const void* p, bool device, const char* what) {
  EXPECT_EQ(is_device_pointer_uncached(p), device) << what;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(is_device_pointer(p), device) << what << " (cached)";
}

class PointerKind : public ::testing::Test {
 protected:
  void SetUp() override { cudaFree(nullptr); }
};

TEST_F(PointerKind, AnswersEqualTheRuntimes) {
  static char in_data[4096];
  char on_stack[64];
  std::vector<char> heap(100);
  void* big = std::malloc(64 << 20);
  expect_answers(in_data, false, "static");
  expect_answers(on_stack, false, "stack");
  expect_answers(heap.data(), false, "heap");
  expect_answers(big, false, "large malloc");
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  expect_answers(d, true, "cudaMalloc");
  expect_answers(static_cast<char*>(d) + 12345, true, "inside cudaMalloc");
  void* m = nullptr;
  ASSERT_EQ(cudaMallocManaged(&m, 1 << 20), cudaSuccess);
  expect_answers(m, true, "cudaMallocManaged");
  void* h = nullptr;
  ASSERT_EQ(cudaMallocHost(&h, 1 << 20), cudaSuccess);
  expect_answers(h, false, "cudaMallocHost");
  cudaFree(d);
  cudaFree(m);
  cudaFreeHost(h);
  std::free(big);
}

TEST_F(PointerKind, MappingCallsAreCounted) {
  const uint64_t gen = address_space_generation();
  void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_NE(address_space_generation(), gen);
  const uint64_t gen2 = address_space_generation();
  munmap(p, 1 << 20);
  EXPECT_NE(address_space_generation(), gen2);
}

// Every way the runtime hands out device memory, at sizes that need new address space.
TEST_F(PointerKind, EveryDeviceAllocationIsCounted) {
  std::vector<void*> device;
  for (size_t bytes : {size_t{4} << 10, size_t{2} << 20, size_t{64} << 20, size_t{1} << 30}) {
    for (int i = 0; i < 4; ++i) {
      device.push_back(checked_alloc("cudaMalloc", [bytes] {
        void* d = nullptr;
        return cudaMalloc(&d, bytes) == cudaSuccess ? d : nullptr;
      }));
    }
  }
  device.push_back(checked_alloc("cudaMallocManaged", [] {
    void* d = nullptr;
    return cudaMallocManaged(&d, size_t{256} << 20) == cudaSuccess ? d : nullptr;
  }));
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  void* pooled = checked_alloc("cudaMallocAsync", [s] {
    void* d = nullptr;
    return cudaMallocAsync(&d, size_t{512} << 20, s) == cudaSuccess ? d : nullptr;
  });
  cudaStreamSynchronize(s);
  expect_answers(pooled, true, "cudaMallocAsync");
  for (void* d : device) {
    if (d != nullptr) expect_answers(d, true, "device allocation");
  }
  cudaFreeAsync(pooled, s);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  for (void* d : device) cudaFree(d);
}

// Host memory that is unmapped and then reused by the driver for device memory: the cached "host"
// answer must not survive. Whether the driver picks that range is up to it; when it does, the
// answer must be "device".
TEST_F(PointerKind, HostRangeReusedForDevice) {
  int reused = 0;
  for (int round = 0; round < 8; ++round) {
    const size_t bytes = size_t{64} << 20;
    void* h = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(h, MAP_FAILED);
    EXPECT_FALSE(is_device_pointer(h));
    munmap(h, bytes);
    std::vector<void*> d(8, nullptr);
    for (auto& p : d) cudaMalloc(&p, bytes);
    for (void* p : d) {
      if (p != nullptr && reinterpret_cast<uintptr_t>(p) <= reinterpret_cast<uintptr_t>(h) &&
          reinterpret_cast<uintptr_t>(h) < reinterpret_cast<uintptr_t>(p) + bytes) {
        ++reused;
        EXPECT_TRUE(is_device_pointer(h));
      }
    }
    for (void* p : d) cudaFree(p);
  }
  std::printf("host ranges reused for device memory: %d of 8\n", reused);
}

}  // namespace
}  // namespace mpizip::platform

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
