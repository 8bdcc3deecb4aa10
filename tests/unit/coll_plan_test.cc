// The two-shot allreduce's plan (shards and pieces) and its hello and tags.
#include "coll/plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "coll/wire.h"
#include "src/transport/transport.h"

namespace mpizip::coll {
namespace {

// Shards tile [0, count) in rank order, start 16-byte aligned, differ by at most one unit (which
// may be the short last one); pieces tile each shard in order, none larger than the piece size, and
// pieces() covers the largest shard.
void check_plan(uint64_t count, size_t eb, int p, uint64_t piece) {
  SCOPED_TRACE(testing::Message() << "count " << count << " eb " << eb << " ranks " << p
                                  << " piece " << piece);
  const Plan plan(count, eb, p, piece);
  const uint64_t unit = plan.unit();
  EXPECT_EQ(unit, 16 / eb);
  EXPECT_EQ(plan.piece_elems() % unit, 0u);
  EXPECT_GE(plan.piece_elems(), unit);
  uint64_t next = 0, largest = 0, smallest = ~uint64_t{0};
  for (int r = 0; r < p; ++r) {
    const Range s = plan.shard(r);
    EXPECT_EQ(s.begin, next);
    EXPECT_LE(s.begin, s.end);
    if (!s.empty()) {
      EXPECT_EQ(s.begin % unit, 0u);
    }
    next = s.end;
    largest = std::max(largest, s.size());
    smallest = std::min(smallest, s.size());
    uint64_t at = s.begin;
    for (uint64_t j = 0; j < plan.pieces(); ++j) {
      const Range pc = plan.piece(r, j);
      if (pc.empty()) {
        EXPECT_EQ(at, s.end);
        continue;
      }
      EXPECT_EQ(pc.begin, at);
      EXPECT_LE(pc.size(), plan.piece_elems());
      at = pc.end;
    }
    EXPECT_EQ(at, s.end) << "pieces of shard " << r << " do not cover it";
  }
  EXPECT_EQ(next, count);
  EXPECT_LT(largest - smallest, 2 * unit);  // one unit, and the last unit may be short
  EXPECT_EQ(plan.shard(0).size(), largest);
  EXPECT_EQ(plan.pieces(), (largest + plan.piece_elems() - 1) / plan.piece_elems());
}

// Automatic piece sizes: 16 MiB while the pieces in flight fit in the memory bound or the buffer,
// smaller down to 4 MiB as they stop fitting, never outside [4, 16] MiB.
TEST(AutoPieceBytes, FollowsMemoryAndBuffer) {
  constexpr uint64_t MiB = uint64_t{1} << 20;
  const uint64_t in_flight = 3 * (4 * 3 + 1);  // 4 ranks, 3 slots: 39 pieces
  EXPECT_EQ(auto_piece_bytes(1024 * MiB, in_flight, 256 * MiB), 16 * MiB);  // 1 GiB / 39 > 16 MiB
  EXPECT_EQ(auto_piece_bytes(512 * MiB, in_flight, 256 * MiB), 512 * MiB / 39);
  EXPECT_EQ(auto_piece_bytes(256 * MiB, in_flight, 256 * MiB), 256 * MiB / 39);
  EXPECT_EQ(auto_piece_bytes(32 * MiB, in_flight, 256 * MiB), 256 * MiB / 39);  // the bound rules
  EXPECT_EQ(auto_piece_bytes(1 * MiB, in_flight, 0), 4 * MiB);                  // the floor
  EXPECT_EQ(auto_piece_bytes(uint64_t{1} << 40, 1, 0), 16 * MiB);              // the ceiling
  EXPECT_EQ(auto_piece_bytes(64 * MiB, 0, 0), 16 * MiB);  // no division by zero
  for (uint64_t b = 1; b <= (uint64_t{1} << 34); b *= 3) {
    const uint64_t p = auto_piece_bytes(b, 87, 256 * MiB);  // 8 ranks
    EXPECT_GE(p, kAutoMinPiece);
    EXPECT_LE(p, kAutoMaxPiece);
  }
}

TEST(CollPlan, TilesEveryCount) {
  for (int p : {2, 3, 4, 7, 8, 64}) {
    for (size_t eb : {2u, 4u, 8u}) {
      for (uint64_t count : {0, 1, 2, 7, 8, 9, 63, 64, 65, 1000, 1000003}) {
        check_plan(count, eb, p, 1000);
        check_plan(count, eb, p, 1);
        check_plan(count, eb, p, 1 << 20);
      }
      check_plan(static_cast<uint64_t>(p) - 1, eb, p, 64);
      check_plan(static_cast<uint64_t>(p) + 1, eb, p, 64);
    }
  }
}

TEST(CollPlan, FewerUnitsThanRanks) {
  // 3 floats, 4 ranks: one unit, all of it rank 0's; the others own nothing.
  const Plan plan(3, 4, 4, 1024);
  EXPECT_EQ(plan.shard(0).begin, 0u);
  EXPECT_EQ(plan.shard(0).end, 3u);
  for (int r = 1; r < 4; ++r) EXPECT_TRUE(plan.shard(r).empty());
  EXPECT_EQ(plan.pieces(), 1u);
  EXPECT_TRUE(Plan(0, 4, 4, 1024).shard(0).empty());
  EXPECT_EQ(Plan(0, 4, 4, 1024).pieces(), 0u);
}

TEST(CollPlan, UnevenCountsGoToTheFirstRanks) {
  // 10 units of bf16 (80 elements) over 4 ranks: 3, 3, 2, 2 units; the last unit is short.
  const Plan plan(78, 2, 4, 1 << 20);
  EXPECT_EQ(plan.shard(0).size(), 24u);
  EXPECT_EQ(plan.shard(1).size(), 24u);
  EXPECT_EQ(plan.shard(2).size(), 16u);
  EXPECT_EQ(plan.shard(3).size(), 14u);
}

TEST(CollPlan, PieceSizeRoundsDownToTheUnit) {
  EXPECT_EQ(Plan(1000, 4, 2, 10).piece_elems(), 8u);
  EXPECT_EQ(Plan(1000, 4, 2, 3).piece_elems(), 4u);
  EXPECT_EQ(Plan(1000, 8, 2, 5).piece_elems(), 4u);
}

TEST(CollWire, HelloRoundTrip) {
  const Hello h = make_hello(format::DType::kBf16, kernels::reduce::Op::kMax, 12345, 4096, 77,
                             kHelloCompress, 1 << 20);
  Hello back;
  ASSERT_TRUE(parse_hello(&h, kHelloBytes, &back));
  EXPECT_EQ(back.dtype, format::DType::kBf16);
  EXPECT_EQ(back.op, kernels::reduce::Op::kMax);
  EXPECT_EQ(back.count, 12345u);
  EXPECT_EQ(back.piece_elems, 4096u);
  EXPECT_EQ(back.seq, 77u);
  EXPECT_EQ(back.flags & kHelloCompress, kHelloCompress);
  EXPECT_EQ(back.min_compress_bytes, 1u << 20);
  EXPECT_EQ(compare_hello(h, back), Disagreement::kNone);
}

TEST(CollWire, HelloRejectsDamageAndWrongSizes) {
  const Hello h = make_hello(format::DType::kFp32, kernels::reduce::Op::kSum, 10, 8, 0, 0, 0);
  Hello back;
  EXPECT_FALSE(parse_hello(&h, kHelloBytes - 1, &back));
  EXPECT_FALSE(parse_hello(&h, 0, &back));
  for (size_t byte = 0; byte < kHelloBytes; ++byte) {
    Hello bad = h;
    reinterpret_cast<uint8_t*>(&bad)[byte] ^= 0x10;
    EXPECT_FALSE(parse_hello(&bad, kHelloBytes, &back)) << "byte " << byte;
  }
}

TEST(CollWire, DisagreementsInOrderOfPrecedence) {
  using kernels::reduce::Op;
  const Hello mine = make_hello(format::DType::kFp32, Op::kSum, 100, 8, 5, kHelloCompress, 0);
  // The sender's compression choice is not an argument: it may differ.
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp32, Op::kSum, 100, 8, 5, 0, 64)),
            Disagreement::kNone);
  EXPECT_EQ(
      compare_hello(mine, make_hello(format::DType::kFp64, Op::kSum, 100, 8, 5, kHelloFailed, 0)),
      Disagreement::kFailed);
  // Another collective (a scan against an allreduce), or another root: before the arguments.
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp64, Op::kMax, 99, 8, 5, 0, 0, 6, 0)),
            Disagreement::kCollective);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp64, Op::kSum, 100, 8, 5, 0, 0, 0, 1)),
            Disagreement::kRoot);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp64, Op::kMax, 99, 8, 5, 0, 0)),
            Disagreement::kType);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp32, Op::kMax, 99, 8, 5, 0, 0)),
            Disagreement::kOp);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp32, Op::kSum, 99, 8, 5, 0, 0)),
            Disagreement::kCount);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp32, Op::kSum, 100, 16, 5, 0, 0)),
            Disagreement::kPieceSize);
  EXPECT_EQ(compare_hello(mine, make_hello(format::DType::kFp32, Op::kSum, 100, 8, 6, 0, 0)),
            Disagreement::kSequence);
}

TEST(CollWire, TagsAreCollectiveAndDistinct) {
  std::set<uint64_t> seen;
  for (uint64_t seq : {uint64_t{0}, uint64_t{1}, uint64_t{0x7FFFFFFE}}) {
    EXPECT_TRUE(seen.insert(make_tag(seq, Kind::kHello, 0)).second);
    for (Kind k : {Kind::kReduceScatter, Kind::kAllgather}) {
      for (uint64_t j : {uint64_t{0}, uint64_t{1}, kMaxPieces - 1}) {
        const uint64_t tag = make_tag(seq, k, j);
        EXPECT_NE(tag & transport::kCollectiveTag, 0u);
        EXPECT_TRUE(seen.insert(tag).second);
      }
    }
  }
  // Dense: a collective's tags follow the previous collective's.
  EXPECT_EQ(make_tag(5, Kind::kReduceScatter, 3) - make_tag(5, Kind::kHello, 0), 7u);
  EXPECT_EQ(make_tag(5, Kind::kAllgather, 3) - make_tag(5, Kind::kHello, 0), 8u);
  EXPECT_EQ(make_tag(6, Kind::kHello, 0) - make_tag(5, Kind::kHello, 0), kTagsPerCollective);
  EXPECT_LT(make_tag(5, Kind::kAllgather, kMaxPieces - 1), make_tag(6, Kind::kHello, 0));
}

}  // namespace
}  // namespace mpizip::coll
