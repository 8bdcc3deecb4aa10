// cost::Model (cost/model.h): the decision follows the link's rate, the ratio and the codec's
// speed as the formula says; the transport's figure is not moved by observations; a measured link
// is the decaying maximum of what its messages took; the codec's rate follows its encodings; the
// CPU's pipeline rate is what its whole messages took, and a CPU codec taken for slow is tried
// again now and then; a link taken for slow is measured raw again now and then; the report counts
// what was decided; the two-shot's calls are measured each way and take the faster; messages in
// flight to a peer spread a compressed message's fixed costs, and the GPU codec's rate is learnt
// from each encode job's own time, not the queue before it.
#include "cost/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace mpizip::cost {
namespace {

using format::DType;
constexpr uint64_t kKiB = 1 << 10;
constexpr uint64_t kMiB = 1 << 20;

TEST(CostModel, DecisionFlipsWithTheLinkRate) {
  Model m(4);
  m.set_link(1, 12.5e9);  // 100 Gb/s Ethernet
  m.set_link(2, 400e9);   // NVLink between nodes
  m.set_link(3, 47e9);
  // bf16 at its typical ratio, 64 MiB on the GPU: compressed on the slow link, raw on the fast.
  const double r = Model::typical_ratio(DType::kBf16);
  EXPECT_TRUE(m.predict(1, DType::kBf16, Side::kGpu, 64 * kMiB, r).compress);
  EXPECT_FALSE(m.predict(2, DType::kBf16, Side::kGpu, 64 * kMiB, r).compress);
  // At 47 GB/s the codec's fixed cost loses at 1 MiB (measured 0.66x) and wins at 16 MiB (1.47x).
  EXPECT_FALSE(m.predict(3, DType::kBf16, Side::kGpu, kMiB, r).compress);
  EXPECT_TRUE(m.predict(3, DType::kBf16, Side::kGpu, 16 * kMiB, r).compress);
  // Nothing to save: never compressed, however slow the link.
  EXPECT_FALSE(m.predict(1, DType::kBf16, Side::kGpu, 64 * kMiB, 1.0).compress);
  EXPECT_FALSE(m.predict(1, DType::kBf16, Side::kGpu, 64 * kMiB, 0.99).compress);
}

TEST(CostModel, FormulaOfBothSides) {
  Model m(2, 0.0);
  m.set_link(1, 10e9);
  const double b = 100.0 * kMiB;
  const Prediction gpu = m.predict(1, DType::kFp32, Side::kGpu, 100 * kMiB, 0.5);
  const double enc = m.encode_rate(DType::kFp32, Side::kGpu);
  const double latency = m.codec_latency(Side::kGpu);
  EXPECT_NEAR(latency, 25e-6, 1e-12);
  EXPECT_EQ(m.codec_latency(Side::kCpu), 0.0);
  EXPECT_NEAR(gpu.raw_seconds, b / 10e9, 1e-12);
  const double pass = latency + b / enc;  // each codec pass: its latency and its bytes
  EXPECT_NEAR(gpu.compressed_seconds, 20e-6 + std::max(0.5 * b / 10e9, pass) + pass, 1e-9);
  const Prediction cpu = m.predict(1, DType::kFp32, Side::kCpu, 100 * kMiB, 0.5);
  const double cenc = m.encode_rate(DType::kFp32, Side::kCpu);
  EXPECT_NEAR(cpu.compressed_seconds, 10e-6 + std::max(0.5 * b / 10e9, b / cenc), 1e-9);
}

TEST(CostModel, MessagesInFlightSpreadTheFixedCosts) {
  Model m(3, 0.0);
  m.set_link(1, 47e9);
  const double r = 0.69;  // bf16 uniform, measured
  const double b = 8.0 * kMiB;
  const double pass = m.codec_latency(Side::kGpu) + b / m.encode_rate(DType::kBf16, Side::kGpu);
  const double wire = r * b / 47e9;
  for (uint32_t others : {0u, 1u, 3u, 63u}) {
    const Prediction p = m.predict(1, DType::kBf16, Side::kGpu, 8 * kMiB, r, others);
    EXPECT_NEAR(p.compressed_seconds, std::max(wire, pass) + (20e-6 + pass) / (1.0 + others), 1e-9);
    EXPECT_NEAR(p.raw_seconds, b / 47e9, 1e-12);  // raw is the link's whatever is in flight
  }
  // 8 MiB at 47 GB/s: alone it goes raw (the codec's fixed costs in a row), with one message more
  // in flight compressed (the grid measured raw at 0.92 of compressed there, two in flight).
  Model d(3);
  d.set_link(1, 47e9);
  EXPECT_FALSE(d.predict(1, DType::kBf16, Side::kGpu, 8 * kMiB, r, 0).compress);
  EXPECT_TRUE(d.predict(1, DType::kBf16, Side::kGpu, 8 * kMiB, r, 1).compress);
  // However many are in flight, a codec pass slower than the raw message keeps it raw (1 MiB: a
  // 25 us pass against 22 us on the link).
  EXPECT_FALSE(d.predict(1, DType::kBf16, Side::kGpu, kMiB, r, 63).compress);
  // The CPU's chunked pipeline already overlaps its stages: no change.
  EXPECT_DOUBLE_EQ(d.predict(1, DType::kBf16, Side::kCpu, 8 * kMiB, r, 0).compressed_seconds,
                   d.predict(1, DType::kBf16, Side::kCpu, 8 * kMiB, r, 5).compressed_seconds);
  // The count: enter() says how many others are under way, leave() takes one off (never below 0,
  // peers out of range ignored).
  EXPECT_EQ(d.enter(1), 0u);
  EXPECT_EQ(d.enter(1), 1u);
  EXPECT_EQ(d.enter(2), 0u);
  d.leave(1);
  EXPECT_EQ(d.enter(1), 1u);
  d.leave(1);
  d.leave(1);
  d.leave(1);
  EXPECT_EQ(d.enter(1), 0u);
  EXPECT_EQ(d.enter(7), 0u);
  d.leave(-1);
}

TEST(CostModel, EncodeJobsQueuedBehindOthersTeachTheirOwnTime) {
  Model queued(2), alone(2);
  queued.set_link(1, 25e9);
  alone.set_link(1, 25e9);
  // 20 jobs of 2 MiB queued at once on the one codec stream, each taking 40 us of its own: the
  // k-th's start-to-end time is 40 k us. Each teaches 40 us, as a job alone does.
  for (int k = 1; k <= 20; ++k) {
    queued.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 40e-6 * k, 1e-3, -1, 100.0);
    alone.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 40e-6, 1e-3, -1, 200.0 + k);
  }
  EXPECT_NEAR(queued.encode_rate(DType::kBf16, Side::kGpu) / alone.encode_rate(DType::kBf16, Side::kGpu),
              1.0, 1e-9);
  // Where its start is unknown, the whole time counts (the 20th job's 800 us: a slower codec).
  Model unknown(2), one(2);
  unknown.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 800e-6, 1e-3);
  one.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 40e-6, 1e-3, -1, 5.0);
  EXPECT_LT(unknown.encode_rate(DType::kBf16, Side::kGpu), one.encode_rate(DType::kBf16, Side::kGpu));
  // A job that did not start before the last one ended keeps its whole time; one slowed by other
  // work on the GPU (its own time 120 us) teaches a slower rate.
  Model slowed(2);
  slowed.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 40e-6, 1e-3, -1, 10.0);
  const double fast = slowed.encode_rate(DType::kBf16, Side::kGpu);
  slowed.observe(1, DType::kBf16, Side::kGpu, 2 * kMiB, kMiB, true, 120e-6, 1e-3, -1, 11.0);
  EXPECT_LT(slowed.encode_rate(DType::kBf16, Side::kGpu), fast);
}

TEST(CostModel, TransportFigureStaysMeasuredLinkIsADecayingMaximum) {
  Model m(3);
  m.set_link(1, 47e9);
  m.observe(1, DType::kBf16, Side::kGpu, 64 * kMiB, 64 * kMiB, false, 0, 1.0);  // very slow
  EXPECT_DOUBLE_EQ(m.link(1), 47e9);
  EXPECT_TRUE(m.knows_link(1));
  EXPECT_FALSE(m.knows_link(2));
  // Peer 2: a 10 GB/s message, then slower ones (completions seen late): the fastest decays.
  m.observe(2, DType::kBf16, Side::kGpu, 10 * kMiB, 10 * kMiB, false, 0, 10.0 * kMiB / 10e9);
  EXPECT_NEAR(m.link(2), 10e9, 1e3);
  m.observe(2, DType::kBf16, Side::kGpu, 10 * kMiB, 10 * kMiB, false, 0, 10.0 * kMiB / 1e9);
  EXPECT_NEAR(m.link(2), 10e9 * 0.98, 1e3);
  // A faster one lifts it at once.
  m.observe(2, DType::kBf16, Side::kGpu, 10 * kMiB, 10 * kMiB, false, 0, 10.0 * kMiB / 20e9);
  EXPECT_NEAR(m.link(2), 20e9, 1e3);
  // Small messages teach nothing of the rate.
  m.observe(2, DType::kBf16, Side::kGpu, 4096, 4096, false, 0, 1e-3);
  EXPECT_NEAR(m.link(2), 20e9, 1e3);
}

TEST(CostModel, CodecRateFollowsItsEncodings) {
  Model m(2);
  const double before = m.encode_rate(DType::kBf16, Side::kGpu);
  // Encodings at 100 GB/s beyond the pass's latency: the rate is of the bytes, the latency apart.
  const double latency = m.codec_latency(Side::kGpu);
  for (int i = 0; i < 40; ++i)
    m.observe(1, DType::kBf16, Side::kGpu, 64 * kMiB, 40 * kMiB, true, latency + 64.0 * kMiB / 100e9, 1e-3);
  EXPECT_NEAR(m.encode_rate(DType::kBf16, Side::kGpu), 100e9, 1e9);
  EXPECT_NE(before, m.encode_rate(DType::kBf16, Side::kGpu));
  EXPECT_DOUBLE_EQ(m.encode_rate(DType::kFp32, Side::kGpu), before);  // per type
}

// The CPU codec: its chunks' encode rate until a whole compressed message has been seen, then the
// pipeline's rate as messages see it (a decaying maximum); where that rate alone keeps messages raw,
// one in kExplore is sent compressed, and a faster pipeline it finds turns the decision.
TEST(CostModel, CpuPipelineRateFromWholeMessagesRetriedWhereItKeepsRaw) {
  Model m(2, 0.0);
  m.set_link(1, 0.4e9);
  const uint64_t b = 4 * kMiB;
  const double bd = static_cast<double>(b);
  const double cenc = m.encode_rate(DType::kBf16, Side::kCpu);
  const Prediction seed = m.predict(1, DType::kBf16, Side::kCpu, b, 0.66);
  EXPECT_NEAR(seed.compressed_seconds, 10e-6 + std::max(0.66 * bd / 0.4e9, bd / cenc), 1e-9);
  // Messages one after another, each at 0.3 GB/s (the receiver's decoding shares the cores):
  // slower than raw.
  const double one = 10e-6 + bd / 0.3e9;
  double now = 100;
  for (int i = 0; i < 4; ++i) {
    now += one;
    m.observe(1, DType::kBf16, Side::kCpu, b, b * 2 / 3, true, bd / 2e9, one, now);
  }
  const Prediction slow = m.predict(1, DType::kBf16, Side::kCpu, b, 0.66);
  EXPECT_NEAR(slow.compressed_seconds, one, 1e-6);
  EXPECT_FALSE(slow.compress);
  EXPECT_TRUE(slow.codec_bound);
  // Four posted together, each completing after its predecessor (0.15 GB/s post to completion
  // each, one after another): the burst's overlapping times count once, 0.6 GB/s, faster than raw.
  now += 1;
  const double posted = now, each = bd / 0.6e9;
  for (int i = 1; i <= 4; ++i)
    m.observe(1, DType::kBf16, Side::kCpu, b, b * 2 / 3, true, bd / 2e9, i * each + 10e-6, posted + i * each + 10e-6);
  EXPECT_TRUE(m.predict(1, DType::kBf16, Side::kCpu, b, 0.66).compress);
  // A slow stretch later: the maximum decays 2% a burst, down to what the messages show.
  for (int i = 0; i < 200; ++i) {
    now += 10;
    m.observe(1, DType::kBf16, Side::kCpu, b, b * 2 / 3, true, bd / 2e9, one, now);
  }
  EXPECT_FALSE(m.predict(1, DType::kBf16, Side::kCpu, b, 0.66).compress);
  // Kept raw by the codec alone: every 32nd such decision starts a trial of 8 compressed messages
  // in a row, to measure the pipeline again.
  int compressed = 0, first = -1;
  for (int i = 0; i < 64; ++i) {
    const bool c = m.decide(1, DType::kBf16, Side::kCpu, b, 0.66).compress;
    compressed += c;
    if (c && first < 0) first = i;
  }
  EXPECT_EQ(compressed, static_cast<int>(Model::kTrial));
  EXPECT_EQ(first, 31);
  // Where the chunks' encode rate (the pipeline's upper bound) would keep messages raw too, no
  // trial: 1.6 GB/s against the 0.8 GB/s seed.
  Model fast(2, 0.0);
  fast.set_link(1, 1.6e9);
  int tried = 0;
  for (int i = 0; i < 64; ++i) tried += fast.decide(1, DType::kBf16, Side::kCpu, b, 0.66).compress;
  EXPECT_EQ(tried, 0);
  // The GPU's prediction is not the CPU's pipeline.
  EXPECT_FALSE(m.predict(1, DType::kBf16, Side::kGpu, b, 1.0).codec_bound);
}

TEST(CostModel, MeasuredLinkExploresRawAndReportCounts) {
  Model m(2);
  m.set_default_link(1e9);  // taken for slow: every message compresses but for the explorations
  int raw = 0;
  for (int i = 0; i < 64; ++i)
    raw += m.decide(1, DType::kBf16, Side::kGpu, 64 * kMiB, 0.66).compress ? 0 : 1;
  EXPECT_EQ(raw, 2);
  Report r = m.report();
  EXPECT_EQ(r.compressed, 62u);
  EXPECT_EQ(r.raw, 2u);
  // The codec's figures as the decisions used them: the GPU's for bf16, nothing of the CPU's.
  EXPECT_DOUBLE_EQ(r.codec_rate[static_cast<size_t>(Side::kGpu)], m.encode_rate(DType::kBf16, Side::kGpu));
  EXPECT_DOUBLE_EQ(r.codec_latency[static_cast<size_t>(Side::kGpu)], m.codec_latency(Side::kGpu));
  EXPECT_EQ(r.codec_rate[static_cast<size_t>(Side::kCpu)], 0.0);
  // A link the transport names is never explored.
  m.set_link(1, 1e9);
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(m.decide(1, DType::kBf16, Side::kGpu, 64 * kMiB, 0.66).compress);
}

// The two-shot's calls: each size class compresses its first kTries calls, goes raw for the next
// kTries, then takes the faster way and explores the other kExplore calls on; classes are apart; a
// change of what each way takes turns the choice at the next exploration.
TEST(CostModel, CollectivesMeasureEachWayThenTakeTheFaster) {
  Model m(4);
  const uint64_t big = 64 * kMiB, small = kMiB;
  auto call = [&](uint64_t bytes, double raw_s, double compressed_s) {
    const bool c = m.collective_compress(bytes);
    m.collective_observe(bytes, c, c ? compressed_s : raw_s);
    return c;
  };
  for (uint32_t i = 0; i < Model::kTries; ++i) EXPECT_TRUE(call(big, 2.0, 1.0)) << i;
  for (uint32_t i = 0; i < Model::kTries; ++i) EXPECT_FALSE(call(big, 2.0, 1.0)) << i;
  int compressed = 0, calls = 0;
  for (; calls < 60; ++calls) compressed += call(big, 2.0, 1.0) ? 1 : 0;
  EXPECT_GE(compressed, 57);  // the faster way but for explorations
  EXPECT_LT(compressed, 60);
  // The small class is its own: raw is faster there.
  for (uint32_t i = 0; i < 2 * Model::kTries; ++i) call(small, 1.0, 3.0);
  int raw = 0;
  for (int i = 0; i < 60; ++i) raw += call(small, 1.0, 3.0) ? 0 : 1;
  EXPECT_GE(raw, 57);
  // The link gets faster for the big class: the compressed way turns slower, and the choice follows.
  for (int i = 0; i < 200; ++i) call(big, 0.5, 1.0);
  int late = 0;
  for (int i = 0; i < 32; ++i) late += call(big, 0.5, 1.0) ? 1 : 0;
  EXPECT_LE(late, 2);
  const Report r = m.report();
  EXPECT_EQ(r.collectives_compressed + r.collectives_raw, static_cast<uint64_t>(4 + 60 + 4 + 60 + 200 + 32));
}

// Explorations of a way that stays slower space out (kExplore, then twice as far each time, at most
// kExploreMax apart): a way 3x slower costs a few calls in thousands, not one in kExplore.
TEST(CostModel, CollectiveExplorationsBackOff) {
  Model m(2);
  const uint64_t bytes = 64 * kMiB;
  int explored = 0;
  std::vector<int> at;
  for (int i = 0; i < 4000; ++i) {
    const bool c = m.collective_compress(bytes);
    m.collective_observe(bytes, c, c ? 3.0 : 1.0);
    if (i >= static_cast<int>(2 * Model::kTries) && c) {
      ++explored;
      at.push_back(i);
    }
  }
  // Calls 36, 100, 228, 484, 996, 2020, 3044: seven, each gap twice the one before up to 1024.
  EXPECT_EQ(explored, 7);
  ASSERT_GE(at.size(), 3u);
  EXPECT_EQ(at[0], static_cast<int>(2 * Model::kTries + Model::kExplore));
  for (size_t i = 2; i < at.size(); ++i)
    EXPECT_EQ(at[i] - at[i - 1], std::min<int>(2 * (at[i - 1] - at[i - 2]), static_cast<int>(Model::kExploreMax)));
  // The way turns: the next exploration finds raw slower now, and from then on the calls compress.
  int compressed = 0;
  for (int i = 0; i < 2048; ++i) {
    const bool c = m.collective_compress(bytes);
    m.collective_observe(bytes, c, c ? 1.0 : 3.0);
    compressed += c ? 1 : 0;
  }
  EXPECT_GE(compressed, 2048 - static_cast<int>(Model::kExploreMax) - 8);
}

// A class near one that measured both ways with a clear winner (kClear) takes that way without
// tries, up to kInheritClasses classes away, in the direction compressing's gain moves: raw from a
// larger class, compressed from a smaller one. A class near the crossover, only next to classes
// that inherited, or on the other side, measures both ways itself.
TEST(CostModel, CollectiveClassesInheritAClearNeighbourInTheGainsDirection) {
  Model m(4);
  auto call = [&](uint64_t bytes, double raw_s, double compressed_s) {
    const bool c = m.collective_compress(bytes);
    m.collective_observe(bytes, c, c ? compressed_s : raw_s);
    return c;
  };
  auto tries = [&](uint64_t bytes, double raw_s, double compressed_s) {  // T T F F: its own tries
    std::vector<bool> ways;
    for (uint32_t i = 0; i < 2 * Model::kTries; ++i) ways.push_back(call(bytes, raw_s, compressed_s));
    return ways == std::vector<bool>{true, true, false, false};
  };
  EXPECT_TRUE(tries(32 * kMiB, 1.0, 3.0));  // raw 3x faster
  for (uint64_t mib : {16, 8}) {  // 1 and 2 classes below: raw at once, no tries
    for (int i = 0; i < 8; ++i) EXPECT_FALSE(call(mib * kMiB, 0.5, 1.5)) << mib << " MiB call " << i;
  }
  // Above a raw class the ways may cross: 64 MiB measures both.
  EXPECT_TRUE(tries(64 * kMiB, 2.0, 1.5));
  // 4 MiB: its neighbours within two classes (8 and 16 MiB) inherited: its own tries.
  EXPECT_TRUE(tries(4 * kMiB, 0.2, 0.6));
  // A compressed winner is taken by the classes above it, not below.
  EXPECT_TRUE(tries(256 * kKiB, 3.0, 1.0));
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(call(512 * kKiB, 3.0, 1.0)) << i;
  EXPECT_TRUE(tries(128 * kKiB, 3.0, 1.0));
  // Near the crossover no class inherits: 1 GiB measured 1.2x apart, 512 MiB tries both ways.
  EXPECT_TRUE(tries(1024 * kMiB, 1.0, 1.2));
  EXPECT_TRUE(tries(512 * kMiB, 0.5, 0.6));
}

}  // namespace
}  // namespace mpizip::cost
