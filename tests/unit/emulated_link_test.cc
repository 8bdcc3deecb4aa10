// The emulated link's clocks: a link per pair of ranks, or one per rank that every destination
// (and every communicator) shares; peers of the rank's own node never paced.
#include "src/transport/emulated.h"

#include <gtest/gtest.h>

namespace mpizip::transport {
namespace {

constexpr uint64_t kBytes = 1000000;  // 1 ms at 1 GB/s

TEST(EmulatedLink, PairLinksRunSideBySide) {
  EmulatedLink link(1.0, 0, {0, 1, 1}, Links::kPair);
  const LinkSlot a = link.reserve(1, kBytes), b = link.reserve(2, kBytes), c = link.reserve(1, kBytes);
  ASSERT_TRUE(a.paced && b.paced && c.paced);
  EXPECT_EQ(a.end_ns - a.start_ns, 1000000);
  EXPECT_LT(b.start_ns, a.end_ns);   // another destination: its own link
  EXPECT_GE(c.start_ns, a.end_ns);   // the same destination: after the first
}

TEST(EmulatedLink, RankLinkIsSharedByDestinationsAndLinks) {
  EmulatedLink one(1.0, 0, {0, 1, 1}, Links::kRank), other(1.0, 0, {1, 0}, Links::kRank);
  const LinkSlot a = one.reserve(1, kBytes), b = one.reserve(2, kBytes), c = other.reserve(0, kBytes);
  EXPECT_GE(b.start_ns, a.end_ns);  // another destination waits for the one link
  EXPECT_GE(c.start_ns, b.end_ns);  // so does another communicator's transfer
}

TEST(EmulatedLink, PeersOfTheSameNodeAreNotPaced) {
  EmulatedLink link(1.0, 5, {1, 0}, Links::kRank);
  EXPECT_FALSE(link.reserve(1, kBytes).paced);
  const LinkSlot s = link.reserve(0, 0);
  EXPECT_TRUE(s.paced);
  EXPECT_EQ(s.arrive_ns - s.end_ns, 5000);  // a zero-byte transfer still pays the latency
}

}  // namespace
}  // namespace mpizip::transport
