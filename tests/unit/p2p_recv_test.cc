// The receiver's handling of a match message, without MPI traffic: inline payloads (raw and
// compressed) land bit-exactly in the user's buffer; a corrupt stream, another element type, a
// message that is not MPIZip's and a too-small buffer give their MPI errors and never write past
// the buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/codec_cpu.h"
#include "p2p/recv.h"
#include "p2p/wire.h"

namespace mpizip::p2p {
namespace {


Channel channel() {
  Channel ch;
  ch.policy.eager_bytes = kMaxInlineBytes;
  return ch;
}

std::vector<uint16_t> bf16_data(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) {
    float f = u(g);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    x = static_cast<uint16_t>(bits >> 16);
  }
  return v;
}

// A match message: header and inline payload.
std::vector<uint8_t> message(Encoding enc, format::DType t, uint64_t count,
                             const std::vector<uint8_t>& payload) {
  MatchHeader h = make_header(Payload::kInline, enc, t, 0, count, payload.size());
  std::vector<uint8_t> m(kHeaderBytes + payload.size());
  std::memcpy(m.data(), &h, kHeaderBytes);
  if (!payload.empty()) std::memcpy(m.data() + kHeaderBytes, payload.data(), payload.size());
  return m;
}

std::vector<uint8_t> compressed(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out(kernels::cpu::max_compressed_size(format::DType::kBf16, v.size()));
  uint64_t n = 0;
  EXPECT_EQ(kernels::cpu::compress(format::DType::kBf16, v.data(), v.size(), out.data(), out.size(),
                                   &n),
            Status::kOk);
  out.resize(n);
  return out;
}

UserBuffer user(std::vector<uint16_t>* dst, int count, format::DType t = format::DType::kBf16) {
  UserBuffer b;
  b.ptr = dst->data();
  b.count = count;
  b.dtype = t;
  return b;
}

TEST(P2pRecv, InlineRawAndCompressedAreBitExact) {
  auto v = bf16_data(4000, 1);
  std::vector<uint8_t> raw(v.size() * 2);
  std::memcpy(raw.data(), v.data(), raw.size());
  for (Encoding enc : {Encoding::kRaw, Encoding::kCompressed}) {
    auto payload = enc == Encoding::kRaw ? raw : compressed(v);
    auto m = message(enc, format::DType::kBf16, v.size(), payload);
    std::vector<uint16_t> dst(v.size() + 8, 0xBEEF);
    RecvOp op(channel(), user(&dst, static_cast<int>(v.size())), m.data(), m.size(), 3, 7);
    ASSERT_TRUE(op.progress());
    EXPECT_EQ(op.status().error, Status::kOk);
    EXPECT_EQ(op.status().source, 3);
    EXPECT_EQ(op.status().tag, 7);
    EXPECT_EQ(op.status().bytes, v.size() * 2);
    EXPECT_EQ(std::memcmp(dst.data(), v.data(), v.size() * 2), 0);
    EXPECT_EQ(dst[v.size()], 0xBEEF);
  }
}

TEST(P2pRecv, CorruptStreamIsReportedAndStaysInBounds) {
  auto v = bf16_data(6000, 2);
  auto payload = compressed(v);
  int detected = 0;
  for (size_t pos = 32; pos < payload.size(); pos += 97) {
    auto bad = payload;
    bad[pos] ^= 0x5A;
    auto m = message(Encoding::kCompressed, format::DType::kBf16, v.size(), bad);
    std::vector<uint16_t> dst(v.size() + 8, 0xBEEF);
    RecvOp op(channel(), user(&dst, static_cast<int>(v.size())), m.data(), m.size(), 0, 0);
    ASSERT_TRUE(op.progress());
    EXPECT_TRUE(op.status().error == Status::kOk || op.status().error == Status::kCorruptStream);
    if (op.status().error == Status::kCorruptStream) ++detected;
    EXPECT_EQ(dst[v.size()], 0xBEEF) << "wrote past the buffer, flip at " << pos;
  }
  EXPECT_GT(detected, 0);
}

// A stream of another element type with the header's element count holds fewer bytes than the
// header announces: it must not pass for the message (found by tests/fuzz/fuzz_chunked.cc).
TEST(P2pRecv, AStreamOfAnotherElementTypeIsCorrupt) {
  std::vector<uint8_t> bytes(500);
  std::mt19937 g(3);
  for (auto& x : bytes) x = static_cast<uint8_t>(g());  // incompressible: a STORED stream
  std::vector<uint8_t> s(kernels::cpu::max_compressed_size(format::DType::kE5m2, bytes.size()));
  uint64_t n = 0;
  ASSERT_EQ(kernels::cpu::compress(format::DType::kE5m2, bytes.data(), bytes.size(), s.data(),
                                   s.size(), &n),
            Status::kOk);
  s.resize(n);
  // The header says bf16 of the same count: 1000 bytes, of which the stream would fill 500 (its
  // 532 bytes could hold 500 bf16's raw section, so the header itself is consistent).
  ASSERT_GE(s.size(), format::raw_bytes(format::DType::kBf16, bytes.size()));
  auto m = message(Encoding::kCompressed, format::DType::kBf16, bytes.size(), s);
  std::vector<uint16_t> dst(bytes.size() + 8, 0xBEEF);
  RecvOp op(channel(), user(&dst, static_cast<int>(bytes.size())), m.data(), m.size(), 0, 0);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kCorruptStream);
}

// A receive whose datatype names another element width (floats received as bf16, which MPI calls
// erroneous) gets the message's bytes, as the MPI library delivers them, raw or compressed.
TEST(P2pRecv, AnotherElementWidthGetsTheBytes) {
  auto v = bf16_data(100, 3);
  for (Encoding enc : {Encoding::kRaw, Encoding::kCompressed}) {
    std::vector<uint8_t> raw(200);
    std::memcpy(raw.data(), v.data(), 200);
    auto m = message(enc, format::DType::kBf16, 100, enc == Encoding::kRaw ? raw : compressed(v));
    std::vector<uint16_t> dst(102, 0xBEEF);
    RecvOp op(channel(), user(&dst, 50, format::DType::kFp32), m.data(), m.size(), 0, 0);
    ASSERT_TRUE(op.progress());
    EXPECT_EQ(op.status().error, Status::kOk);
    EXPECT_EQ(op.status().bytes, 200u);
    EXPECT_EQ(std::vector<uint16_t>(dst.begin(), dst.begin() + 100), v);
    EXPECT_EQ(dst[100], 0xBEEF);
  }
  // Larger than the buffer: whole elements of the sender's type, then a truncation.
  auto m = message(Encoding::kRaw, format::DType::kBf16, 100, [&] {
    std::vector<uint8_t> raw(200);
    std::memcpy(raw.data(), v.data(), 200);
    return raw;
  }());
  std::vector<uint16_t> dst(100, 0xBEEF);
  RecvOp op(channel(), user(&dst, 25, format::DType::kFp32), m.data(), m.size(), 0, 0);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kTruncated);
  EXPECT_EQ(op.status().bytes, 100u);
  EXPECT_EQ(std::vector<uint16_t>(dst.begin(), dst.begin() + 50),
            std::vector<uint16_t>(v.begin(), v.begin() + 50));
  EXPECT_EQ(dst[50], 0xBEEF);
}

// MPIZIP_BF16, MPIZIP_FP16 and MPI_UINT16_T share one type signature (MPI_UINT16_T's), which is
// all MPI asks the two sides to share: a bf16 message is delivered bit-exactly to an fp16 receive.
TEST(P2pRecv, TheSameSignatureOfAnotherElementTypeIsDelivered) {
  auto v = bf16_data(4000, 4);
  for (Encoding enc : {Encoding::kRaw, Encoding::kCompressed}) {
    std::vector<uint8_t> raw(v.size() * 2);
    std::memcpy(raw.data(), v.data(), raw.size());
    auto payload = enc == Encoding::kRaw ? raw : compressed(v);
    auto m = message(enc, format::DType::kBf16, v.size(), payload);
    std::vector<uint16_t> dst(v.size(), 0xBEEF);
    RecvOp op(channel(), user(&dst, static_cast<int>(v.size()), format::DType::kFp16), m.data(),
              m.size(), 0, 0);
    ASSERT_TRUE(op.progress());
    EXPECT_EQ(op.status().error, Status::kOk);
    EXPECT_EQ(dst, v);
  }
}

// A message that is not MPIZip's (the MPI library's own, from a sender that did not take the
// protocol) is delivered as its bytes, as the MPI library would.
TEST(P2pRecv, APlainMessageGetsItsBytes) {
  std::vector<uint8_t> plain(64, 0x11);
  std::vector<uint16_t> dst(100, 0xBEEF);
  RecvOp op(channel(), user(&dst, 100), plain.data(), plain.size(), 0, 0);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kOk);
  EXPECT_EQ(op.status().bytes, 64u);
  EXPECT_EQ(dst[0], 0x1111);
  EXPECT_EQ(dst[31], 0x1111);
  EXPECT_EQ(dst[32], 0xBEEF);
}

TEST(P2pRecv, TruncationDeliversThePrefix) {
  auto v = bf16_data(3000, 4);
  for (Encoding enc : {Encoding::kRaw, Encoding::kCompressed}) {
    std::vector<uint8_t> raw(v.size() * 2);
    std::memcpy(raw.data(), v.data(), raw.size());
    auto m = message(enc, format::DType::kBf16, v.size(), enc == Encoding::kRaw ? raw : compressed(v));
    std::vector<uint16_t> dst(1001, 0xBEEF);
    RecvOp op(channel(), user(&dst, 1000), m.data(), m.size(), 0, 0);
    ASSERT_TRUE(op.progress());
    EXPECT_EQ(op.status().error, Status::kTruncated);
    EXPECT_EQ(op.status().bytes, 2000u);
    EXPECT_EQ(std::memcmp(dst.data(), v.data(), 2000), 0);
    EXPECT_EQ(dst[1000], 0xBEEF);
  }
}

// A match message that MPI truncated to a receive smaller than it: its header, from the bytes that
// landed, gives the message's size (inline and header-only, padded to the bare size); a whole
// message, a header cut short, a flipped byte or a plain message give nothing.
TEST(P2pWire, ATruncatedMatchMessageStillNamesItsMessage) {
  const uint64_t bare = 4000;
  MatchHeader back;
  // 20000 bytes of fp32 in a stream of its raw section and 100 bytes more.
  const uint64_t stream = format::raw_bytes(format::DType::kFp32, 5000) + 100;
  ASSERT_LT(stream + kHeaderBytes, 20000u);
  std::vector<uint8_t> m(kHeaderBytes + stream, 0x5A);
  MatchHeader h = make_header(Payload::kInline, Encoding::kCompressed, format::DType::kFp32, 0,
                              5000, stream);
  std::memcpy(m.data(), &h, kHeaderBytes);
  for (size_t landed : {size_t{48}, size_t{4001}, size_t{m.size() - 1}}) {
    ASSERT_TRUE(parse_truncated_header(m.data(), landed, bare, &back)) << landed;
    EXPECT_EQ(back.app_bytes, 20000u);
  }
  EXPECT_FALSE(parse_truncated_header(m.data(), m.size(), bare, &back));  // not truncated
  EXPECT_FALSE(parse_truncated_header(m.data(), 47, bare, &back));    // no whole header
  m[9] ^= 1;
  EXPECT_FALSE(parse_truncated_header(m.data(), 4001, bare, &back));  // not a valid header
  h = make_header(Payload::kBulk, Encoding::kRaw, format::DType::kFp32, 3, 5000, 20000);
  std::memcpy(m.data(), &h, kHeaderBytes);  // header-only, padded to 4001 bytes
  ASSERT_TRUE(parse_truncated_header(m.data(), 4000, bare, &back));
  EXPECT_EQ(back.app_bytes, 20000u);
  EXPECT_FALSE(parse_truncated_header(m.data(), 4001, bare, &back));
  std::vector<uint8_t> plain(6000, 0x33);
  EXPECT_FALSE(parse_truncated_header(plain.data(), 5000, bare, &back));
}

// An inline payload longer than kMaxInlineBytes is refused, and one so long that the header and it
// add up past 2^64 to the message's size (a well-formed check word: a hostile sender computes it)
// too: whole or truncated, such a header would make the receiver read far outside the message.
TEST(P2pWire, AnInlinePayloadLongerThanTheCapIsRefused) {
  const uint64_t bare = 4000;
  MatchHeader back;
  // kHeaderBytes + this wraps to 47: padded to the bare size, as a short inline message would be.
  const uint64_t wrapped = ~uint64_t{0};
  MatchHeader h = make_header(Payload::kInline, Encoding::kCompressed, format::DType::kFp32, 0, 2,
                              wrapped);
  std::vector<uint8_t> m(bare + 1, 0);
  std::memcpy(m.data(), &h, kHeaderBytes);
  EXPECT_FALSE(parse_header(m.data(), m.size(), bare, &back));
  EXPECT_FALSE(parse_truncated_header(m.data(), kHeaderBytes, bare, &back));
  h = make_header(Payload::kInline, Encoding::kCompressed, format::DType::kFp32, 0, 2,
                  kMaxInlineBytes + 1);
  std::vector<uint8_t> big(kHeaderBytes + kMaxInlineBytes + 1, 0);
  std::memcpy(big.data(), &h, kHeaderBytes);
  EXPECT_FALSE(parse_header(big.data(), big.size(), bare, &back));
  EXPECT_FALSE(parse_header(big.data(), big.size(), 0, &back));
  h = make_header(Payload::kInline, Encoding::kCompressed, format::DType::kFp32, 0, 2,
                  kMaxInlineBytes);
  std::memcpy(big.data(), &h, kHeaderBytes);
  EXPECT_TRUE(parse_header(big.data(), big.size() - 1, bare, &back));  // at the cap: taken
  EXPECT_EQ(back.payload_bytes, kMaxInlineBytes);
}

TEST(P2pWire, HeaderRoundTripAndRejection) {
  MatchHeader h = make_header(Payload::kBulk, Encoding::kCompressed, format::DType::kFp32, 77, 1000,
                              3456);
  MatchHeader back;
  ASSERT_TRUE(parse_header(&h, kHeaderBytes, 0, &back));
  EXPECT_EQ(back.bulk_tag, 77u);
  EXPECT_EQ(back.app_bytes, 4000u);
  EXPECT_FALSE(parse_header(&h, kHeaderBytes - 1, 0, &back));  // short
  for (size_t i = 0; i < kHeaderBytes; ++i) {                // any flipped byte is caught
    auto bad = h;
    reinterpret_cast<uint8_t*>(&bad)[i] ^= 0x01;
    EXPECT_FALSE(parse_header(&bad, kHeaderBytes, 0, &back)) << "byte " << i;
  }
}

// A header whose count x element size wraps 64 bits is rejected, even with a valid check word
// (found by tests/fuzz/fuzz_match_header.cc: 2^63 fp16 elements announced as 0 bytes).
TEST(P2pWire, ACountBeyondTheFormatsBoundIsRejected) {
  MatchHeader back;
  for (uint64_t count : {kMaxCount + 1, uint64_t{1} << 63, ~uint64_t{0}}) {
    const MatchHeader h = make_header(Payload::kBulk, Encoding::kRaw, format::DType::kFp16, 5, count,
                                      count * 2);
    EXPECT_FALSE(parse_header(&h, kHeaderBytes, 0, &back)) << count;
  }
  const MatchHeader h = make_header(Payload::kBulk, Encoding::kRaw, format::DType::kFp16, 5,
                                    kMaxCount, kMaxCount * 2);
  EXPECT_TRUE(parse_header(&h, kHeaderBytes, 0, &back));
}

// A compressed payload cannot announce more elements than its raw section allows: a few bytes
// claiming gigabytes made a truncated receive allocate them (found by fuzz_match_header.cc).
TEST(P2pWire, ACompressedPayloadTooSmallForItsCountIsRejected) {
  MatchHeader back;
  for (auto t : {format::DType::kBf16, format::DType::kE5m2, format::DType::kFp64}) {
    const uint64_t count = uint64_t{1} << 32;
    const uint64_t raw = format::raw_bytes(t, count);
    MatchHeader h = make_header(Payload::kBulk, Encoding::kCompressed, t, 5, count, raw - 1);
    EXPECT_FALSE(parse_header(&h, kHeaderBytes, 0, &back));
    h = make_header(Payload::kBulk, Encoding::kCompressed, t, 5, count, raw);
    EXPECT_TRUE(parse_header(&h, kHeaderBytes, 0, &back));
  }
  // The smallest streams (STORED) still pass.
  for (int t = 1; t <= 6; ++t) {
    const auto dtype = static_cast<format::DType>(t);
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{7}}) {
      std::vector<uint8_t> data(count * format::elem_bytes(dtype), 0x11);
      std::vector<uint8_t> s(kernels::cpu::max_compressed_size(dtype, count));
      uint64_t n = 0;
      ASSERT_EQ(kernels::cpu::compress(dtype, data.data(), count, s.data(), s.size(), &n), Status::kOk);
      const MatchHeader h = make_header(Payload::kBulk, Encoding::kCompressed, dtype, 5, count, n);
      EXPECT_TRUE(parse_header(&h, kHeaderBytes, 0, &back)) << t << " " << count;
    }
  }
}

// A plain message (wire.h): the application's bytes alone, of any size, on the blocking fast
// path; a match message is left to the general receiver.
TEST(P2pRecv, PlainFastPath) {
  const auto v = bf16_data(1000, 11);
  std::vector<uint8_t> m(2000);
  std::memcpy(m.data(), v.data(), m.size());
  std::vector<uint16_t> dst(1000, 0xdead);
  platform::OpStatus st;
  Traffic tr;
  ASSERT_TRUE(deliver_plain(user(&dst, 1000), m.data(), m.size(), 8, &st, &tr));
  EXPECT_EQ(st.error, Status::kOk);
  EXPECT_EQ(st.bytes, 2000u);
  EXPECT_EQ(dst, v);
  // Another element type gets the bytes too, as the MPI library delivers them.
  std::vector<uint16_t> fp16(1000, 0);
  ASSERT_TRUE(deliver_plain(user(&fp16, 1000, format::DType::kFp16), m.data(), m.size(), 8, &st, &tr));
  EXPECT_EQ(fp16, v);
  // Truncation: the first bytes land, nothing past the buffer.
  std::vector<uint16_t> small(501, 0xbeef);
  ASSERT_TRUE(deliver_plain(user(&small, 500), m.data(), m.size(), 8, &st, &tr));
  EXPECT_EQ(st.error, Status::kTruncated);
  EXPECT_EQ(st.bytes, 1000u);
  EXPECT_TRUE(std::equal(small.begin(), small.begin() + 500, v.begin()));
  EXPECT_EQ(small[500], 0xbeef);
  // A match message is not the fast path's; the same bytes one short of its size are plain.
  const auto full = message(Encoding::kCompressed, format::DType::kBf16, 1000, compressed(v));
  EXPECT_FALSE(deliver_plain(user(&dst, 1000), full.data(), full.size(), 8, &st, &tr));
  EXPECT_TRUE(deliver_plain(user(&dst, 1000), full.data(), full.size() - 1, 8, &st, &tr));
  EXPECT_EQ(st.bytes, full.size() - 1);
  // Nothing lands in a device buffer here.
  UserBuffer dev = user(&dst, 1000);
  dev.device = true;
  EXPECT_FALSE(deliver_plain(dev, m.data(), m.size(), 8, &st, &tr));
}

// Bare messages (wire.h): at most 8 bytes, the application's bytes alone, on both paths.
TEST(P2pRecv, BareMessages) {
  const auto v = bf16_data(4, 3);  // 8 bytes
  std::vector<uint8_t> m(8);
  std::memcpy(m.data(), v.data(), 8);
  std::vector<uint16_t> dst(5, 0x7777);
  platform::OpStatus st;
  Traffic tr;
  ASSERT_TRUE(deliver_plain(user(&dst, 4), m.data(), m.size(), 8, &st, &tr));
  EXPECT_EQ(st.error, Status::kOk);
  EXPECT_EQ(st.bytes, 8u);
  EXPECT_TRUE(std::equal(v.begin(), v.end(), dst.begin()));
  EXPECT_EQ(dst[4], 0x7777);
  ASSERT_TRUE(deliver_plain(user(&dst, 3), m.data(), m.size(), 8, &st, &tr));  // truncation
  EXPECT_EQ(st.error, Status::kTruncated);
  EXPECT_EQ(st.bytes, 6u);
  ASSERT_TRUE(deliver_plain(user(&dst, 4), m.data(), 0, 8, &st, &tr));  // zero elements
  EXPECT_EQ(st.error, Status::kOk);
  EXPECT_EQ(st.bytes, 0u);
  std::vector<uint16_t> general(4, 0);
  RecvOp op(channel(), user(&general, 4), m.data(), m.size(), 2, 5);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kOk);
  EXPECT_EQ(op.status().bytes, 8u);
  EXPECT_EQ(general, v);
  std::vector<uint16_t> shorter(2, 0);
  RecvOp cut(channel(), user(&shorter, 2), m.data(), m.size(), 2, 5);
  ASSERT_TRUE(cut.progress());
  EXPECT_EQ(cut.status().error, Status::kTruncated);
  EXPECT_EQ(shorter[0], v[0]);
  EXPECT_EQ(shorter[1], v[1]);
}

TEST(P2pRecv, PlainThroughTheGeneralPath) {
  const auto v = bf16_data(300, 5);
  std::vector<uint8_t> m(600);
  std::memcpy(m.data(), v.data(), m.size());
  std::vector<uint16_t> dst(300, 0);
  RecvOp op(channel(), user(&dst, 300), m.data(), m.size(), 1, 9);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kOk);
  EXPECT_EQ(op.status().bytes, 600u);
  EXPECT_EQ(dst, v);
  std::vector<uint16_t> cut(200, 0);
  RecvOp shorter(channel(), user(&cut, 200), m.data(), m.size(), 1, 9);
  ASSERT_TRUE(shorter.progress());
  EXPECT_EQ(shorter.status().error, Status::kTruncated);
  EXPECT_TRUE(std::equal(cut.begin(), cut.end(), v.begin()));
}

// With a larger bare size (MPIZIP_BARE_BYTES), every match message but a bare one is longer than it:
// a full header is padded to bare + 1 bytes, and anything of at most bare bytes is the
// application's, whatever it looks like.
TEST(P2pWire, BareSizeSeparatesTheForms) {
  constexpr uint64_t kBare = 4000;
  const MatchHeader h = make_header(Payload::kBulk, Encoding::kRaw, format::DType::kFp32, 5, 10000,
                                    40000);
  std::vector<uint8_t> padded(match_size(kHeaderBytes, kBare), 0);
  ASSERT_EQ(padded.size(), kBare + 1);
  std::memcpy(padded.data(), &h, kHeaderBytes);
  MatchHeader back;
  EXPECT_TRUE(parse_header(padded.data(), padded.size(), kBare, &back));
  EXPECT_EQ(back.bulk_tag, 5u);
  EXPECT_FALSE(parse_header(padded.data(), kHeaderBytes, kBare, &back));   // unpadded: bare
  EXPECT_FALSE(parse_header(padded.data(), kBare + 2, kBare, &back));      // padded wrongly
  EXPECT_TRUE(parse_header(padded.data(), kHeaderBytes, 0, &back));        // bare size 0
  // A header with an inline payload, longer than the bare size, parses; at most that size, it is
  // the application's bytes.
  const auto v = bf16_data(2001, 9);  // 4002 bytes of payload
  std::vector<uint8_t> raw(v.size() * 2);
  std::memcpy(raw.data(), v.data(), raw.size());
  const auto big = message(Encoding::kRaw, format::DType::kBf16, v.size(), raw);
  ASSERT_GT(big.size(), kBare);
  EXPECT_TRUE(parse_header(big.data(), big.size(), kBare, &back));
  const auto w = bf16_data(100, 9);
  const auto small = message(Encoding::kCompressed, format::DType::kBf16, w.size(), compressed(w));
  EXPECT_FALSE(parse_header(small.data(), small.size(), kBare, &back));
}

// The receiver takes a message of at most the bare size as the application's bytes even when they
// look like a header (an application relaying MPIZip's own match messages, say).
TEST(P2pRecv, BareMessageThatLooksLikeAHeader) {
  const auto v = bf16_data(100, 4);
  const auto m = message(Encoding::kCompressed, format::DType::kBf16, v.size(), compressed(v));
  Channel ch = channel();
  ch.policy.bare_bytes = 4000;
  std::vector<uint8_t> dst(300, 0);
  RecvOp op(ch, UserBuffer{dst.data(), 150, format::DType::kBf16, false}, m.data(), m.size(), 0, 1);
  ASSERT_TRUE(op.progress());
  EXPECT_EQ(op.status().error, Status::kOk);
  EXPECT_EQ(op.status().bytes, m.size());
  EXPECT_EQ(std::memcmp(dst.data(), m.data(), m.size()), 0);
  platform::OpStatus st;
  Traffic tr;
  std::vector<uint16_t> fast(150, 0);
  ASSERT_TRUE(deliver_plain(user(&fast, 150), m.data(), m.size(), 4000, &st, &tr));
  EXPECT_EQ(st.bytes, m.size());
  EXPECT_EQ(std::memcmp(fast.data(), m.data(), m.size()), 0);
}

}  // namespace
}  // namespace mpizip::p2p
