// The bounds of the buffer pools (src/platform/buffers.h) when they are exhausted: beyond its
// bound a pool still serves every request, with a block for that one use that is freed when the
// buffer lets it go; the pool's own blocks stay and are reused; a bound of zero keeps nothing; a
// failed allocation takes nothing from the bound; a device buffer without a GPU is kNoDevice.
//
// What a pool holds is observed from outside: pinned bytes (pinned_pool_bytes) plus the heap's
// mmapped bytes (glibc's mallinfo2; blocks of 64 MiB and more are always mmapped). Where neither
// sees the blocks (another allocator) the tests skip. A binary of its own: the pools are
// process-wide, and the accounting test needs the host pool empty at its start (the other tests
// keep nothing in it, so the order of the tests does not matter).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "src/platform/buffers.h"
#include "src/platform/device.h"

namespace mpizip::platform {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBlock = 64 * kMiB;

// Bytes of host blocks allocated now, pooled or not.
uint64_t held() {
  uint64_t heap = 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  heap = mallinfo2().hblkhd;
#endif
  return heap + pinned_pool_bytes();
}

// Within the allocator's bookkeeping (a page per mmapped block) of `want`.
::testing::AssertionResult about(uint64_t got, uint64_t want) {
  if (got >= want && got - want <= 16 * 4096) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got << " bytes held, want about " << want;
}

// Releases every free host block (a request under a zero bound does), then sets the host bound.
void empty_host_pool(uint64_t bound) {
  buffers_configure(0, 0);
  {
    HostBuffer e;
    ASSERT_EQ(e.resize(1), Status::kOk);
  }
  buffers_configure(bound, 0);
}

#define SKIP_UNLESS_SEEN(grew, bytes)                                                      \
  if ((grew) < (bytes)) GTEST_SKIP() << "this allocator's blocks are not observable here"

// The host pool's accounting, in one test because it depends on what the pool holds: nothing at
// the start (this binary's other tests keep nothing), two 64 MiB blocks after the first part.
TEST(PoolBounds, ExhaustedHostPool) {
  static bool ran = false;  // --gtest_repeat: the pool keeps this test's blocks
  if (ran) GTEST_SKIP() << "needs a process whose host pool is empty";
  ran = true;

  // 1. Two blocks fill the pool; beyond the bound every request is still served, with a block of
  // its own that is freed when the buffer lets it go.
  buffers_configure(2 * kBlock, 0);
  const uint64_t base = held();
  HostBuffer a, b;
  ASSERT_EQ(a.resize(kBlock), Status::kOk);
  SKIP_UNLESS_SEEN(held() - base, kBlock);
  ASSERT_EQ(b.resize(kBlock), Status::kOk);
  const uint64_t full = held();  // the pool at its bound
  ASSERT_GE(full - base, 2 * kBlock);
  uint8_t* const pooled[2] = {a.data(), b.data()};
  {
    HostBuffer c, d, e;
    ASSERT_EQ(c.resize(kBlock), Status::kOk);
    ASSERT_EQ(d.resize(kBlock), Status::kOk);
    ASSERT_EQ(e.resize(3 * kBlock), Status::kOk);  // a larger class (192 MiB blocks)
    std::set<uint8_t*> all = {a.data(), b.data(), c.data(), d.data(), e.data()};
    EXPECT_EQ(all.size(), 5u);
    EXPECT_EQ(all.count(nullptr), 0u);
    for (HostBuffer* x : {&c, &d, &e}) std::memset(x->data(), 0x5A, x->size());  // usable whole
    EXPECT_EQ(e.size(), 3 * kBlock);
    EXPECT_GE(held() - full, 2 * kBlock + 3 * kBlock);
  }
  EXPECT_EQ(held(), full) << "blocks beyond the bound must be freed after their one use";
  a.clear();
  b.clear();
  EXPECT_EQ(held(), full) << "the pool's own blocks stay allocated, for reuse";

  // 2. Many rounds of three buffers at once: two take the pool's blocks, the third one of its own,
  // which goes when it is released. Nothing accumulates.
  for (int round = 0; round < 20; ++round) {
    HostBuffer x, y, z;
    ASSERT_EQ(x.resize(kBlock), Status::kOk);
    ASSERT_EQ(y.resize(kBlock - 1), Status::kOk);
    ASSERT_EQ(z.resize(kBlock), Status::kOk);
    EXPECT_TRUE(x.data() == pooled[0] || x.data() == pooled[1]) << "round " << round;
    EXPECT_TRUE(y.data() == pooled[0] || y.data() == pooled[1]) << "round " << round;
    EXPECT_NE(x.data(), y.data());
    EXPECT_TRUE(z.data() != pooled[0] && z.data() != pooled[1]) << "round " << round;
    EXPECT_TRUE(about(held(), full + kBlock)) << "round " << round;
  }
  EXPECT_EQ(held(), full);

  // 3. A failed allocation takes nothing from the bound. 1 TiB (the largest class) is more than any
  // machine these tests run on can give; the bound has room for it beside the pool's 128 MiB, and
  // so for a 320 MiB block after the failure, but not if the failed 1 TiB were still counted.
  const uint64_t huge = uint64_t{1} << 40;
  buffers_configure(2 * kBlock + huge, 0);
  HostBuffer h;
  const Status s = h.resize(huge);
  if (s == Status::kOk) {
    h.clear();
    buffers_configure(256 * kMiB, 0);
    GTEST_SKIP() << "this system granted 1 TiB (memory overcommit)";
  }
  EXPECT_EQ(s, Status::kOutOfMemory);
  EXPECT_EQ(h.data(), nullptr);
  EXPECT_EQ(h.size(), 0u);
  const uint64_t before = held();
  {
    HostBuffer x;
    ASSERT_EQ(x.resize(300 * kMiB), Status::kOk);  // 320 MiB blocks
    SKIP_UNLESS_SEEN(held() - before, 320 * kMiB);
  }
  EXPECT_TRUE(about(held(), before + 320 * kMiB))
      << "the block was not pooled: the failed allocation still counts against the bound";
  EXPECT_EQ(h.resize(kBlock), Status::kOk) << "a buffer whose allocation failed is usable";
  EXPECT_TRUE(h.data() == pooled[0] || h.data() == pooled[1]);
  buffers_configure(256 * kMiB, 0);
}

// Keeps nothing: its blocks (112 MiB) are of a class of their own.
TEST(PoolBounds, ZeroBoundKeepsNothing) {
  empty_host_pool(0);  // what other tests left free
  const uint64_t base = held();
  for (int round = 0; round < 3; ++round) {
    HostBuffer x;
    ASSERT_EQ(x.resize(100 * kMiB), Status::kOk);  // 112 MiB blocks
    SKIP_UNLESS_SEEN(held() - base, 112 * kMiB);
    std::memset(x.data(), 1, x.size());
    x.clear();
    EXPECT_EQ(x.data(), nullptr);
    EXPECT_EQ(held(), base) << "round " << round;
  }
  buffers_configure(256 * kMiB, 0);
}

// At the bound, free blocks of other sizes make room for a new one, which joins the pool; and a bound
// of zero empties the pool on the next request (which this test uses to start from an empty pool
// and to leave one behind).
TEST(PoolBounds, FreeBlocksMakeRoom) {
  empty_host_pool(2 * kBlock);  // what other tests left free
  const uint64_t base = held();
  {
    HostBuffer a, b;
    ASSERT_EQ(a.resize(kBlock), Status::kOk);
    SKIP_UNLESS_SEEN(held() - base, kBlock);
    ASSERT_EQ(b.resize(kBlock), Status::kOk);
  }
  EXPECT_TRUE(about(held(), base + 2 * kBlock)) << "two free 64 MiB blocks in the pool";
  uint8_t* kept = nullptr;
  {
    HostBuffer c;
    ASSERT_EQ(c.resize(96 * kMiB), Status::kOk);  // a 96 MiB block: no room beside the two
    kept = c.data();
    EXPECT_TRUE(about(held(), base + 96 * kMiB)) << "both free blocks released for it";
  }
  EXPECT_TRUE(about(held(), base + 96 * kMiB)) << "the new block stays in the pool";
  {
    HostBuffer d;
    ASSERT_EQ(d.resize(90 * kMiB), Status::kOk);  // the same class: the pooled block
    EXPECT_EQ(d.data(), kept);
  }
  empty_host_pool(0);
  EXPECT_TRUE(about(held(), base)) << "a zero bound releases every free block";
  buffers_configure(256 * kMiB, 0);
}

TEST(PoolBounds, DeviceBufferWithoutAGpu) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  buffers_configure(256 * kMiB, 256 * kMiB);
  DeviceBuffer d;
  EXPECT_EQ(d.resize(kMiB), Status::kNoDevice);
  EXPECT_EQ(d.data(), nullptr);
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.resize(0), Status::kOk);
  d.clear();
  DeviceBuffer moved(std::move(d));
  EXPECT_EQ(moved.data(), nullptr);
}

}  // namespace
}  // namespace mpizip::platform
