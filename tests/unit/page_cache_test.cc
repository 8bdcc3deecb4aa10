// The per-thread page cache behind is_device_pointer (src/platform/page_cache.h): answers what was
// put for the same generation only, and keeps the pages of buffers at regular strides (the pattern
// that thrashed a direct-mapped cache: two OSU buffers 64 KiB apart) side by side.
#include "src/platform/page_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace mpizip::platform {
namespace {

TEST(PageCache, AnswersOnlyForItsGeneration) {
  PageCache c;
  EXPECT_EQ(c.find(42, 1), -1);
  c.put(42, 1, true);
  c.put(43, 1, false);
  EXPECT_EQ(c.find(42, 1), 1);
  EXPECT_EQ(c.find(43, 1), 0);
  EXPECT_EQ(c.find(42, 2), -1);  // the address space changed
  EXPECT_EQ(c.find(44, 1), -1);
}

// Two pages at every stride from 1 to 4096 pages: both stay cached while used in turn.
TEST(PageCache, TwoBuffersAtAnyStrideBothHit) {
  for (uintptr_t stride = 1; stride <= 4096; ++stride) {
    PageCache c;
    const uintptr_t a = 0x7f0000000ULL >> 12, b = a + stride;
    c.put(a, 7, false);
    c.put(b, 7, true);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(c.find(a, 7), 0) << "stride " << stride;
      ASSERT_EQ(c.find(b, 7), 1) << "stride " << stride;
    }
  }
}

// Four buffers 16 pages apart (send and receive buffers of two benchmarks, say): no set holds more
// than two of them, so every one stays cached.
TEST(PageCache, FourBuffersSixteenPagesApart) {
  PageCache c;
  const uintptr_t base = 0x55550000ULL;
  for (int i = 0; i < 4; ++i) c.put(base + 16 * i, 3, i % 2 == 1);
  int hits = 0;
  for (int i = 0; i < 4; ++i) hits += c.find(base + 16 * i, 3) >= 0;
  EXPECT_EQ(hits, 4);
}

}  // namespace
}  // namespace mpizip::platform
