// p2p::StreamRatios: a stream stops trying compression after kProbe poor messages in a row, tries
// again every kRetry-th message, compresses again as soon as a try pays, and streams (destination,
// tag, element type) are told apart.
#include "p2p/stream_ratios.h"

#include <gtest/gtest.h>

namespace mpizip::p2p {
namespace {

using format::DType;
constexpr uint64_t kApp = 1 << 20;
constexpr uint64_t kPoor = kApp;             // nothing saved
constexpr uint64_t kGood = kApp * 6 / 10;    // a ratio of 0.6

TEST(StreamRatios, ProbeThenRawThenRetry) {
  StreamRatios r;
  for (uint32_t i = 0; i < StreamRatios::kProbe; ++i) {
    ASSERT_TRUE(r.worth_trying(1, 7, DType::kFp32));
    r.record(1, 7, DType::kFp32, kApp, kPoor);
  }
  EXPECT_EQ(r.incompressible_streams(), 1u);
  // Raw until the retry, which is the kRetry-th message after the stream was found out.
  for (uint32_t i = 1; i < StreamRatios::kRetry; ++i) EXPECT_FALSE(r.worth_trying(1, 7, DType::kFp32)) << i;
  EXPECT_EQ(r.skipped_messages(), StreamRatios::kRetry - 1);
  EXPECT_TRUE(r.worth_trying(1, 7, DType::kFp32));
  r.record(1, 7, DType::kFp32, kApp, kPoor);  // still poor: raw again
  EXPECT_FALSE(r.worth_trying(1, 7, DType::kFp32));
  // Another retry that pays: every message tries again.
  for (uint32_t i = 2; i < StreamRatios::kRetry; ++i) (void)r.worth_trying(1, 7, DType::kFp32);
  ASSERT_TRUE(r.worth_trying(1, 7, DType::kFp32));
  r.record(1, 7, DType::kFp32, kApp, kGood);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(r.worth_trying(1, 7, DType::kFp32));
}

TEST(StreamRatios, StreamsAreApartAndAGoodMessageResetsTheProbe) {
  StreamRatios r;
  for (uint32_t i = 0; i < StreamRatios::kProbe; ++i) r.record(1, 7, DType::kBf16, kApp, kPoor);
  EXPECT_FALSE(r.worth_trying(1, 7, DType::kBf16));
  EXPECT_TRUE(r.worth_trying(2, 7, DType::kBf16));  // another destination
  EXPECT_TRUE(r.worth_trying(1, 8, DType::kBf16));  // another tag
  EXPECT_TRUE(r.worth_trying(1, 7, DType::kFp32));  // another type
  // Poor, good, poor, poor: never kProbe poor in a row.
  for (uint64_t w : {kPoor, kGood, kPoor, kPoor}) r.record(3, 1, DType::kFp32, kApp, w);
  EXPECT_TRUE(r.worth_trying(3, 1, DType::kFp32));
  // Just under the threshold counts as paying.
  for (int i = 0; i < 5; ++i) r.record(4, 1, DType::kFp32, 100, 94);
  EXPECT_TRUE(r.worth_trying(4, 1, DType::kFp32));
  EXPECT_EQ(r.incompressible_streams(), 1u);
}

}  // namespace
}  // namespace mpizip::p2p

namespace mpizip::p2p {
namespace {

// What the cost model asks (expected_ratio): the fallback until a try told, then the moving
// average; a stream found poor counts as incompressible at once, and its retry asks afresh.
TEST(StreamRatios, ExpectedRatioAndTheModelsRetry) {
  using format::DType;
  StreamRatios r;
  EXPECT_DOUBLE_EQ(r.expected_ratio(1, 3, DType::kBf16, 0.66), 0.66);
  r.record(1, 3, DType::kBf16, 1000, 600);
  EXPECT_DOUBLE_EQ(r.expected_ratio(1, 3, DType::kBf16, 0.66), 0.6);
  r.record(1, 3, DType::kBf16, 1000, 700);
  EXPECT_DOUBLE_EQ(r.expected_ratio(1, 3, DType::kBf16, 0.66), 0.65);
  r.record(2, 3, DType::kBf16, 1000, 1000);  // nothing saved, once
  EXPECT_DOUBLE_EQ(r.expected_ratio(2, 3, DType::kBf16, 0.66), 1.0);
  EXPECT_EQ(r.incompressible_streams(), 1u);
  for (uint32_t i = 1; i < StreamRatios::kRetry; ++i) EXPECT_FALSE(r.worth_trying(2, 3, DType::kBf16));
  EXPECT_TRUE(r.worth_trying(2, 3, DType::kBf16));
  EXPECT_DOUBLE_EQ(r.expected_ratio(2, 3, DType::kBf16, 0.66), 0.66);  // the retry asks afresh
  EXPECT_DOUBLE_EQ(r.expected_ratio(2, 3, DType::kBf16, 0.66), 1.0);
}

}  // namespace
}  // namespace mpizip::p2p
