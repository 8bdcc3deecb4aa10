// The host buffer pool: blocks are reused, sizes honoured, contents kept on shrink, moves transfer
// ownership, and the bound sends blocks beyond it back to the heap.
#include "src/platform/buffers.h"
#include "src/platform/gpu_timing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>

namespace mpizip::platform {
namespace {

TEST(HostBuffer, ReusesFreedBlocks) {
  buffers_configure(uint64_t{64} << 20, 0);
  HostBuffer a;
  ASSERT_EQ(a.resize(100000), Status::kOk);
  uint8_t* first = a.data();
  ASSERT_NE(first, nullptr);
  std::memset(a.data(), 7, a.size());
  a.clear();
  EXPECT_EQ(a.data(), nullptr);
  HostBuffer b;
  ASSERT_EQ(b.resize(99000), Status::kOk);  // same size class (112 KiB)
  EXPECT_EQ(b.data(), first);
}

TEST(HostBuffer, KeepsContentsWithinItsBlock) {
  HostBuffer a;
  ASSERT_EQ(a.resize(5000), Status::kOk);
  for (int i = 0; i < 5000; ++i) a.data()[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(a.resize(3000), Status::kOk);
  ASSERT_EQ(a.resize(60000), Status::kOk);  // grows within the 64 KiB block
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(a.data()[i], static_cast<uint8_t>(i));
  EXPECT_EQ(a.size(), 60000u);
}

TEST(HostBuffer, BlocksComeInQuarterOctaves) {
  // 8 MiB + 1 takes a 10 MiB block: it grows to 10 MiB in place, and beyond it moves.
  buffers_configure(uint64_t{64} << 20, 0);
  HostBuffer a;
  ASSERT_EQ(a.resize((uint64_t{8} << 20) + 1), Status::kOk);
  uint8_t* p = a.data();
  a.data()[0] = 42;
  ASSERT_EQ(a.resize(uint64_t{10} << 20), Status::kOk);
  EXPECT_EQ(a.data(), p);
  EXPECT_EQ(a.data()[0], 42);
  ASSERT_EQ(a.resize((uint64_t{10} << 20) + 1), Status::kOk);
  EXPECT_EQ(a.size(), (uint64_t{10} << 20) + 1);
  buffers_configure(uint64_t{256} << 20, 0);
}

TEST(HostBuffer, MoveTransfersOwnership) {
  HostBuffer a;
  ASSERT_EQ(a.resize(1 << 20), Status::kOk);
  uint8_t* p = a.data();
  HostBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  HostBuffer c;
  ASSERT_EQ(c.resize(10), Status::kOk);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), uint64_t{1} << 20);
}

TEST(HostBuffer, BeyondTheBoundBlocksAreNotKept) {
  buffers_configure(uint64_t{1} << 20, 0);  // room for one 1 MiB block
  HostBuffer a, b;
  ASSERT_EQ(a.resize(uint64_t{1} << 20), Status::kOk);
  ASSERT_EQ(b.resize(uint64_t{1} << 20), Status::kOk);  // over the bound: a heap block
  EXPECT_NE(a.data(), b.data());
  std::memset(b.data(), 1, b.size());  // usable
  buffers_configure(uint64_t{256} << 20, 0);
}

TEST(HostBuffer, ZeroAndHugeSizes) {
  HostBuffer a;
  EXPECT_EQ(a.resize(0), Status::kOk);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.resize(uint64_t{1} << 62), Status::kOutOfMemory);
  EXPECT_EQ(a.data(), nullptr);
}

}  // namespace
}  // namespace mpizip::platform

namespace mpizip::platform {
namespace {

// The statistics' GPU-call timing counts a timed scope only while it is on, under its own kind.
TEST(GpuTiming, CountsTimedScopesOnlyWhileOn) {
  auto calls_of = [](GpuCall c) {
    for (const GpuCallTime& t : gpu_timing())
      if (t.call == c) return t.calls;
    return uint64_t{0};
  };
  gpu_timing_enable(false);
  { GpuTimer t(GpuCall::kEngineSync); }
  EXPECT_EQ(calls_of(GpuCall::kEngineSync), 0u);
  gpu_timing_enable(true);
  for (int i = 0; i < 3; ++i) {
    GpuTimer t(GpuCall::kEngineSync);
  }
  gpu_timing_enable(false);
  EXPECT_EQ(calls_of(GpuCall::kEngineSync), 3u);
  EXPECT_EQ(calls_of(GpuCall::kEngineLaunch), 0u);
  EXPECT_STREQ(gpu_call_name(GpuCall::kEngineSync), "engine kernel waited for");
}

}  // namespace
}  // namespace mpizip::platform
