// The CPU reference codec: bit-exact round trips over every pattern of the 16-bit and fp8 types and
// 10^8 random patterns of the wider ones, every legal block size and precision, the stream layout
// against a decoder written from docs/FORMAT.md alone, and corruption of every region of a stream.
#include "kernels/codec_cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/ans_cpu.h"
#include "kernels/ans_simd_cpu.h"
#include "osu-bench/common/data.h"

namespace mpizip::kernels::cpu {
namespace {

using format::DType;
using Bytes = std::vector<uint8_t>;

constexpr DType kTypes[] = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64, DType::kE4m3, DType::kE5m2};

osub::ElemType elem_type(DType t) {
  switch (t) {
    case DType::kBf16: return osub::ElemType::kBf16;
    case DType::kFp16: return osub::ElemType::kFp16;
    case DType::kFp32: return osub::ElemType::kFloat;
    case DType::kFp64: return osub::ElemType::kDouble;
    case DType::kE4m3: return osub::ElemType::kFp8E4M3;
    case DType::kE5m2: return osub::ElemType::kFp8E5M2;
  }
  return osub::ElemType::kFloat;
}
std::string type_name(DType t) { return std::string(osub::elem_type_name(elem_type(t))); }

// `count` elements of the benchmarks' data of a kind; `seed` picks the rank whose data it is.
Bytes make_data(DType t, osub::DataKind kind, uint64_t count, uint64_t seed) {
  Bytes out(count * format::elem_bytes(t));
  osub::generate_data(kind, elem_type(t), static_cast<int>(seed % 1000), count, nullptr,
                      reinterpret_cast<std::byte*>(out.data()));
  return out;
}

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

Bytes compress_ok(DType t, const uint8_t* src, uint64_t count, const EncodeOptions& opt = {}) {
  Bytes out(max_compressed_size(t, count));
  uint64_t written = 0;
  EXPECT_EQ(compress(t, src, count, out.data(), out.size(), &written, opt), Status::kOk);
  out.resize(written);
  return out;
}

// Compresses, decompresses and compares bytes; returns the stream.
Bytes round_trip(DType t, const uint8_t* src, uint64_t count, const EncodeOptions& opt = {},
                 int dec_threads = 1) {
  Bytes s = compress_ok(t, src, count, opt);
  const uint64_t n = count * format::elem_bytes(t);
  Bytes back(n + 1, 0xA5);
  uint64_t got = ~uint64_t{0};
  EXPECT_EQ(decompress(s.data(), s.size(), back.data(), n, &got, dec_threads), Status::kOk);
  EXPECT_EQ(got, count);
  EXPECT_TRUE(n == 0 || std::memcmp(back.data(), src, n) == 0) << "round trip differs, count " << count;
  EXPECT_EQ(back[n], 0xA5) << "wrote past the output";
  return s;
}

bool is_stored(const Bytes& s) { return s[6] & format::kFlagStored; }
bool is_shared(const Bytes& s) { return s[6] & format::kFlagSharedTable; }

// ---------------------------------------------------------------------------------------------
// A decoder written from the text of docs/FORMAT.md, lane by lane and without any of the codec's
// code: it checks the encoder's word order and table layout, which a round trip alone cannot.
// table: a SHARED_TABLE stream's plane table (bitmap, then frequencies) the block is coded with;
// null: the block starts with its own.
bool spec_decode_block(const uint8_t* blk, uint64_t bytes, int pb, uint32_t n, uint8_t* out,
                       const uint8_t* table = nullptr) {
  const uint32_t m = 1u << pb, low = 1u << 16;
  const uint8_t* tab = table ? table : blk;
  uint32_t f[256] = {}, c[256] = {};
  int k = 0;
  uint32_t sum = 0;
  for (int s = 0; s < 256; ++s) {
    if (!(tab[s / 8] & (1 << (s % 8)))) continue;
    uint16_t v;
    std::memcpy(&v, tab + 32 + 2 * k++, 2);
    f[s] = v;
    c[s] = sum;
    sum += v;
  }
  if (sum != m) return false;
  uint64_t states = table ? 0 : (32 + 2 * k + 3) / 4 * 4, words = states + 128;
  uint32_t x[32];
  std::memcpy(x, blk + states, 128);
  uint64_t pos = 0;
  for (uint32_t g = 0; g * 32 < n; ++g) {
    int active = static_cast<int>(std::min<uint32_t>(32, n - g * 32));
    bool renorm[32] = {};
    for (int lane = 0; lane < active; ++lane) {
      uint32_t r = x[lane] & (m - 1);
      int s = 0;
      while (!(f[s] && c[s] <= r && r < c[s] + f[s])) ++s;
      out[g * 32 + lane] = static_cast<uint8_t>(s);
      x[lane] = f[s] * (x[lane] >> pb) + r - c[s];
      renorm[lane] = x[lane] < low;
    }
    int used = 0;
    for (int lane = 0; lane < active; ++lane) {
      if (!renorm[lane]) continue;
      int lower = 0;
      for (int j = 0; j < lane; ++j) lower += renorm[j];
      uint16_t w;
      std::memcpy(&w, blk + words + 2 * (pos + lower), 2);
      x[lane] = (x[lane] << 16) | w;
      ++used;
    }
    pos += used;
  }
  for (uint32_t v : x)
    if (v != low) return false;
  return (words + 2 * pos + 15) / 16 * 16 == bytes;
}

// Splits a stream into its blocks by the docs' layout and decodes each with spec_decode_block.
void expect_spec_layout(DType t, const Bytes& s, const uint8_t* src, uint64_t count) {
  ASSERT_FALSE(is_stored(s));
  const int lb = s[7], pb = s[24];
  const uint64_t co = format::coded_offset(t, count);
  ASSERT_EQ(load64(s.data() + co), s.size() - co);
  const uint64_t nsym = format::symbols_per_plane(t, count), b = uint64_t{1} << lb;
  const uint64_t nblocks = format::total_blocks(t, count, lb);
  uint64_t data = co + format::block_data_offset(t, count, lb);
  // SHARED_TABLE: one table per plane (bitmap, frequencies, padding to 16) before the blocks.
  const uint8_t* tables[2] = {nullptr, nullptr};
  if (is_shared(s)) {
    ASSERT_EQ(s[4], 2);
    for (int p = 0; p < format::planes(t); ++p) {
      tables[p] = s.data() + data;
      int k = 0;
      for (int i = 0; i < 32; ++i) k += std::popcount(tables[p][i]);
      data += (32 + 2 * k + 15) / 16 * 16;
    }
  } else {
    ASSERT_EQ(s[4], 1);
  }
  std::vector<Bytes> planes(format::planes(t), Bytes(nsym));
  uint64_t start = 0;
  for (uint64_t k = 0; k < nblocks; ++k) {
    // In a SHARED_TABLE stream, bit 0 of the entry: the block has its own table.
    const uint64_t entry = load64(s.data() + co + 16 + 8 * k), end = entry & ~uint64_t{1};
    if (!is_shared(s)) {
      ASSERT_EQ(entry & 1, 0u);
    }
    uint64_t j = k % format::blocks_per_plane(t, count, lb), p = k / format::blocks_per_plane(t, count, lb);
    uint32_t n = static_cast<uint32_t>(std::min(b, nsym - j * b));
    ASSERT_TRUE(spec_decode_block(s.data() + data + start, end - start, pb, n, planes[p].data() + j * b,
                                  (entry & 1) ? nullptr : tables[p]))
        << "block " << k;
    start = end;
  }
  // The symbols must be the docs' symbols of the input: compare with a split done by hand for the
  // types whose symbol is one byte of one element.
  for (uint64_t i = 0; i < std::min<uint64_t>(count, 4096); ++i) {
    if (t == DType::kBf16 || t == DType::kFp16) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      ASSERT_EQ(planes[0][i], (v >> 7) & 0xFF);
    } else if (t == DType::kFp32) {
      uint32_t v;
      std::memcpy(&v, src + 4 * i, 4);
      ASSERT_EQ(planes[0][i], (v >> 23) & 0xFF);
    } else if (t == DType::kFp64) {
      uint64_t v;
      std::memcpy(&v, src + 8 * i, 8);
      ASSERT_EQ(planes[0][i], (v >> 55) & 0xFF);
      ASSERT_EQ(planes[1][i], (v >> 47) & 0xFF);
    } else if (t == DType::kE5m2) {
      ASSERT_EQ(planes[0][i], (src[i] >> 2) & 0x1F);
    } else if (i % 2 == 0 && i + 1 < count) {
      ASSERT_EQ(planes[0][i / 2], (((src[i] >> 3) & 0xF) << 4) | ((src[i + 1] >> 3) & 0xF));
    }
  }
}

TEST(CodecCpuFormat, BlocksDecodeWithTheDocumentedAlgorithm) {
  for (DType t : kTypes) {
    for (int pb : {9, 12, 15}) {
      for (int table : {kTablePerBlock, kTableShared}) {
        SCOPED_TRACE(type_name(t) + (table == kTableShared ? " shared" : " per block"));
        // fp16 symbols carry 3 mantissa bits: blocks of 1024 would not pay for their table.
        const int lb = t == DType::kFp16 ? 12 : 10;
        uint64_t count = (uint64_t{3} << lb) + 77;
        Bytes d = make_data(t, osub::DataKind::kNormal, count, 7);
        EncodeOptions opt;
        opt.log2_block = lb;
        opt.prob_bits = pb;
        opt.table = table;
        Bytes s = round_trip(t, d.data(), count, opt);
        EXPECT_EQ(is_shared(s), table == kTableShared);
        expect_spec_layout(t, s, d.data(), count);
      }
    }
  }
}

TEST(CodecCpuFormat, RawSectionIsTheDocumentedBits) {
  Bytes d = make_data(DType::kFp32, osub::DataKind::kNormal, 4096, 3);
  const uint32_t v[2] = {0xBF812345, 0x3F7EDCBA};
  std::memcpy(d.data(), v, sizeof v);
  Bytes s = round_trip(DType::kFp32, d.data(), 4096);
  ASSERT_FALSE(is_stored(s));
  const uint64_t r1 = format::raw_subplane_offset(DType::kFp32, 4096, 1);
  ASSERT_EQ(r1, 32 + 2 * 4096u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(s[32 + 2 * i] | s[33 + 2 * i] << 8, v[i] & 0xFFFF);
    EXPECT_EQ(s[r1 + i], ((v[i] >> 24) & 0x80) | ((v[i] >> 16) & 0x7F));
  }
}

TEST(CodecCpuFormat, Fp8RawSectionsAreTheDocumentedBits) {
  for (DType t : {DType::kE4m3, DType::kE5m2}) {
    const uint64_t count = 8192;
    Bytes d = make_data(t, osub::DataKind::kNormal, count, 5);
    std::mt19937 g(6);
    for (int i = 0; i < 64; ++i) d[i] = static_cast<uint8_t>(g());  // every raw bit pattern
    Bytes s = round_trip(t, d.data(), count);
    ASSERT_FALSE(is_stored(s));
    for (uint64_t i = 0; i < 8; ++i) {
      if (t == DType::kE5m2) {  // 24-bit word per 8 elements: sum r_j << 3j
        uint32_t w = 0;
        for (int j = 0; j < 8; ++j) w |= uint32_t(((d[8 * i + j] >> 5) & 4) | (d[8 * i + j] & 3)) << (3 * j);
        EXPECT_EQ(s[32 + 3 * i] | s[33 + 3 * i] << 8 | s[34 + 3 * i] << 16, w) << "group " << i;
      } else {
        uint8_t a = d[2 * i], b = d[2 * i + 1];
        EXPECT_EQ(s[32 + i], (a & 0x80) | ((a & 7) << 4) | ((b & 0x80) >> 4) | (b & 7)) << "pair " << i;
      }
    }
  }
}

TEST(CodecCpuFormat, HeaderFields) {
  Bytes d = make_data(DType::kFp32, osub::DataKind::kUniform, 5000, 1);
  EncodeOptions opt;
  opt.checksum = true;
  opt.log2_block = 11;
  opt.prob_bits = 10;
  opt.table = kTablePerBlock;
  Bytes s = round_trip(DType::kFp32, d.data(), 5000, opt);
  StreamInfo info;
  ASSERT_EQ(read_header(s.data(), 32, &info), Status::kOk);
  EXPECT_EQ(std::memcmp(s.data(), "MPZ1", 4), 0);
  EXPECT_EQ(info.dtype, DType::kFp32);
  EXPECT_EQ(info.count, 5000u);
  EXPECT_EQ(info.flags, format::kFlagChecksum);
  EXPECT_EQ(info.log2_block, 11);
  EXPECT_EQ(info.prob_bits, 10);
  EXPECT_EQ(info.raw_bytes, format::raw_bytes(DType::kFp32, 5000));
  EXPECT_EQ(info.total_bytes_if_known, 0u);  // the coded section is not in the first 32 bytes
  ASSERT_EQ(read_header(s.data(), s.size(), &info), Status::kOk);
  EXPECT_EQ(info.total_bytes_if_known, s.size());
  EXPECT_EQ(s.size() % 16, 0u);
}

// ---------------------------------------------------------------------------------------------
// Exhaustive and random patterns.

TEST(CodecCpuRoundTrip, All16BitPatterns) {
  std::vector<uint16_t> all(65536);
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint16_t> shuffled = all;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  for (DType t : {DType::kBf16, DType::kFp16}) {
    for (auto* v : {&all, &shuffled}) {
      for (int lb : {10, 16}) {
        EncodeOptions opt;
        opt.log2_block = lb;
        opt.checksum = lb == 10;
        round_trip(t, reinterpret_cast<uint8_t*>(v->data()), v->size(), opt);
      }
    }
  }
}

TEST(CodecCpuRoundTrip, AllFp8BytePairs) {
  Bytes pairs(2 * 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    pairs[2 * i] = static_cast<uint8_t>(i >> 8);
    pairs[2 * i + 1] = static_cast<uint8_t>(i);
  }
  for (DType t : {DType::kE4m3, DType::kE5m2}) {
    for (int lb : {10, 13, 16}) {
      EncodeOptions opt;
      opt.log2_block = lb;
      round_trip(t, pairs.data(), pairs.size(), opt);
      round_trip(t, pairs.data() + 1, pairs.size() - 1, opt);  // odd count, pairs shifted
    }
  }
}

// Random patterns whose exponents follow a skewed law (so the coded path is taken), with the
// special values placed explicitly: NaNs with payloads, signed zeros, infinities, subnormals.
template <typename U>
std::vector<U> random_patterns(uint64_t n, uint64_t seed) {
  constexpr int kBits = sizeof(U) * 8, kExpBits = kBits == 32 ? 8 : 11, kMant = kBits - 1 - kExpBits;
  constexpr U kExpMask = static_cast<U>((U{1} << kExpBits) - 1);
  std::mt19937_64 g(seed);
  std::vector<U> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    U bits = static_cast<U>(g());
    uint64_t r = g();
    switch (r % 16) {
      case 0: break;                                                              // any pattern
      case 1: bits = static_cast<U>((bits | (kExpMask << kMant))); break;         // NaN/inf
      case 2: bits = static_cast<U>((bits & ((U{1} << kMant) - 1)) | (bits & (U{1} << (kBits - 1)))); break;  // subnormal
      case 3: bits = static_cast<U>(bits & (U{1} << (kBits - 1))); break;         // +-0
      case 4: bits = static_cast<U>((kExpMask << kMant) | (bits & (U{1} << (kBits - 1)))); break;  // +-inf
      default: {  // exponent near the bias, falling off geometrically
        U e = static_cast<U>((kExpMask >> 1) - std::countr_zero(r | (uint64_t{1} << 40)) % 30);
        bits = static_cast<U>((bits & ~(kExpMask << kMant)) | (e << kMant));
      }
    }
    v[i] = bits;
  }
  return v;
}

template <typename U>
void random_round_trips(DType t, uint64_t total, uint64_t chunk) {
  for (uint64_t done = 0, seed = 1; done < total; done += chunk, ++seed) {
    std::vector<U> v = random_patterns<U>(chunk, seed);
    EncodeOptions opt;
    opt.threads = 2;
    opt.checksum = seed % 2;
    opt.prob_bits = 9 + static_cast<int>(seed % 7);
    Bytes s = round_trip(t, reinterpret_cast<uint8_t*>(v.data()), v.size(), opt, 2);
    ASSERT_FALSE(is_stored(s));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(CodecCpuRoundTrip, HundredMillionRandom32BitPatterns) {
  random_round_trips<uint32_t>(DType::kFp32, 100'000'000, 4'000'000);
}

TEST(CodecCpuRoundTrip, HundredMillionRandom64BitPatterns) {
  random_round_trips<uint64_t>(DType::kFp64, 100'000'000, 4'000'000);
}

TEST(CodecCpuRoundTrip, UniformRandomBitsAreStored) {
  std::vector<uint32_t> v(100000);
  std::mt19937 g(5);
  for (auto& x : v) x = g();
  Bytes s = round_trip(DType::kFp32, reinterpret_cast<uint8_t*>(v.data()), v.size());
  EXPECT_TRUE(is_stored(s));
  EXPECT_EQ(s.size(), 32 + 4 * v.size());
}

// ---------------------------------------------------------------------------------------------
// Realistic data, sizes, options, alignment, threads.

TEST(CodecCpuRoundTrip, RealisticDataReachesTheEntropyBound) {
  for (DType t : kTypes) {
    for (osub::DataKind d : {osub::DataKind::kUniform, osub::DataKind::kNormal}) {
      SCOPED_TRACE(type_name(t) + " " + std::string(osub::data_kind_name(d)));
      const uint64_t count = (uint64_t{4} << 20) / format::elem_bytes(t);
      Bytes v = make_data(t, d, count, 11);
      Bytes s = round_trip(t, v.data(), count);
      double ratio = static_cast<double>(s.size()) / static_cast<double>(v.size());
      EXPECT_LT(ratio, entropy_bound(t, v.data(), count) * 1.02);
    }
  }
}

TEST(CodecCpuRoundTrip, SizesAroundBlockBoundaries) {
  for (DType t : kTypes) {
    SCOPED_TRACE(type_name(t));
    const uint64_t b = 1024 * (t == DType::kE4m3 ? 2 : 1);  // elements per block at log2_block 10
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{31}, uint64_t{33},
                           uint64_t{257}, b - 1, b, b + 1, 3 * b + 17, 7 * b}) {
      Bytes v = make_data(t, osub::DataKind::kNormal, count, count);
      EncodeOptions opt;
      opt.log2_block = 10;
      round_trip(t, v.data(), count, opt);
      opt.log2_block = 0;
      round_trip(t, v.data(), count, opt);
    }
  }
}

TEST(CodecCpuRoundTrip, EveryBlockSizeAndPrecision) {
  for (DType t : kTypes) {
    for (int lb = format::kMinLog2Block; lb <= format::kMaxLog2Block; ++lb) {
      const uint64_t count = (uint64_t{2} << lb) + 5;
      Bytes v = make_data(t, osub::DataKind::kNormal, count, lb);
      for (int pb = format::kMinProbBits; pb <= format::kMaxProbBits; ++pb) {
        SCOPED_TRACE(type_name(t) + " lb " + std::to_string(lb) + " pb " + std::to_string(pb));
        EncodeOptions opt;
        opt.log2_block = lb;
        opt.prob_bits = pb;
        opt.checksum = (lb + pb) % 2;
        Bytes s = round_trip(t, v.data(), count, opt);
        // fp16 and e4m3 symbols have up to 8 bits of entropy: small blocks do not pay for their
        // tables, and STORED is the right answer there.
        if ((t != DType::kFp16 && t != DType::kE4m3) || lb >= 12) {
          EXPECT_FALSE(is_stored(s));
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(CodecCpuRoundTrip, UnalignedPointers) {
  for (DType t : kTypes) {
    const uint64_t count = 5000;
    Bytes v = make_data(t, osub::DataKind::kUniform, count, 2);
    for (int off : {1, 3}) {
      Bytes src(v.size() + off);
      std::memcpy(src.data() + off, v.data(), v.size());
      Bytes s(max_compressed_size(t, count) + 5);
      uint64_t written = 0, got = 0;
      ASSERT_EQ(compress(t, src.data() + off, count, s.data() + 5, s.size() - 5, &written), Status::kOk);
      Bytes copy(written + 7);
      std::memcpy(copy.data() + 7, s.data() + 5, written);
      Bytes out(v.size() + 3);
      ASSERT_EQ(decompress(copy.data() + 7, written, out.data() + off, v.size(), &got), Status::kOk);
      EXPECT_EQ(std::memcmp(out.data() + off, v.data(), v.size()), 0);
    }
  }
}

TEST(CodecCpuRoundTrip, ThreadsDoNotChangeTheStream) {
  for (DType t : {DType::kBf16, DType::kFp64, DType::kE4m3}) {
    for (int table : {kTablePerBlock, kTableShared}) {
      const uint64_t count = 20 * 1024 + 3;
      Bytes v = make_data(t, osub::DataKind::kNormal, count, 9);
      EncodeOptions opt;
      opt.log2_block = 10;
      opt.table = table;
      opt.checksum = true;
      opt.threads = 1;
      Bytes one = round_trip(t, v.data(), count, opt);
      EXPECT_EQ(is_shared(one), table == kTableShared);
      for (int threads : {2, 3, 7, 64}) {
        opt.threads = threads;
        EXPECT_EQ(round_trip(t, v.data(), count, opt, threads), one) << threads << " threads";
      }
    }
  }
}

TEST(CodecCpuRoundTrip, ConstantAndSingleSymbolBlocks) {
  for (DType t : kTypes) {
    Bytes v = make_data(t, osub::DataKind::kConstant, 100000, 0);
    Bytes s = round_trip(t, v.data(), v.size() / format::elem_bytes(t));
    EXPECT_FALSE(is_stored(s));
  }
}

TEST(CodecCpuApi, InvalidArguments) {
  uint8_t buf[256] = {};
  uint64_t w = 0;
  EncodeOptions bad;
  bad.log2_block = 9;
  EXPECT_EQ(compress(DType::kBf16, buf, 4, buf + 64, 128, &w, bad), Status::kInvalidArgument);
  bad = {};
  bad.prob_bits = 16;
  EXPECT_EQ(compress(DType::kBf16, buf, 4, buf + 64, 128, &w, bad), Status::kInvalidArgument);
  EXPECT_EQ(compress(static_cast<DType>(9), buf, 4, buf + 64, 128, &w), Status::kInvalidArgument);
  EXPECT_EQ(compress(DType::kBf16, nullptr, 4, buf + 64, 128, &w), Status::kInvalidArgument);
  EXPECT_EQ(compress(DType::kBf16, buf, 4, buf + 64, 10, &w), Status::kTruncated);
  EXPECT_EQ(decompress(buf, 256, buf, 256, nullptr), Status::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Block coder internals.

TEST(CodecCpuAns, NormalisedFrequenciesAreOptimal) {
  std::mt19937 g(4);
  for (int trial = 0; trial < 200; ++trial) {
    uint32_t counts[256] = {}, freqs[256];
    uint32_t n = 0;
    int k = 1 + g() % 256;
    for (int i = 0; i < k; ++i) {
      uint32_t c = (g() % 3 == 0) ? 1 : g() % 5000 + 1;
      counts[g() % 256] += c;
    }
    for (uint32_t c : counts) n += c;
    int pb = 9 + trial % 7;
    ans::normalize(counts, n, pb, freqs);
    uint32_t sum = 0;
    for (int s = 0; s < 256; ++s) {
      EXPECT_EQ(counts[s] == 0, freqs[s] == 0);
      sum += freqs[s];
    }
    ASSERT_EQ(sum, 1u << pb);
    // No single exchange of one unit between two symbols lowers the coded size.
    for (int a = 0; a < 256; ++a) {
      if (!counts[a]) continue;
      double gain = counts[a] * (std::log2(freqs[a] + 1.0) - std::log2(freqs[a]));
      for (int b = 0; b < 256; ++b) {
        if (b == a || freqs[b] <= 1) continue;
        double loss = counts[b] * (std::log2(freqs[b]) - std::log2(freqs[b] - 1.0));
        ASSERT_LE(gain, loss * (1 + 1e-9) + 1e-6) << "moving a unit from " << b << " to " << a << " helps";
      }
    }
  }
}

TEST(CodecCpuAns, PortableAndSimdPathsAgree) {
  if (!ans::simd::available()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 g(8);
  ans::BlockEncoder enc(16), enc_portable(16, false);
  ans::BlockDecoder simd(true), portable(false);
  for (int trial = 0; trial < 80; ++trial) {
    uint32_t n = 1 + g() % 65536;
    int pb = 9 + trial % 7;  // the AVX2 decoder serves prob_bits up to 12, the encoder all
    Bytes sym(n), out1(n), out2(n);
    int spread = 1 + trial % 31;
    for (auto& s : sym) s = static_cast<uint8_t>(128 + std::countr_zero(g() | (1u << spread)));
    Bytes blk(format::max_block_bytes(n));
    uint64_t size = enc.encode(sym.data(), n, pb, blk.data(), blk.size());
    ASSERT_GT(size, 0u);
    Bytes blk2(blk.size());
    ASSERT_EQ(enc_portable.encode(sym.data(), n, pb, blk2.data(), blk2.size()), size);
    ASSERT_EQ(std::memcmp(blk.data(), blk2.data(), size), 0) << "vector and scalar encoders differ";
    ASSERT_EQ(simd.decode(blk.data(), size, pb, n, out1.data()), Status::kOk);
    ASSERT_EQ(portable.decode(blk.data(), size, pb, n, out2.data()), Status::kOk);
    ASSERT_EQ(out1, sym);
    ASSERT_EQ(out2, sym);
    ASSERT_TRUE(spec_decode_block(blk.data(), size, pb, n, out2.data()));
    ASSERT_EQ(out2, sym);
  }
}

TEST(CodecCpuAns, EntropyBound) {
  Bytes c = make_data(DType::kBf16, osub::DataKind::kConstant, 1000, 0);
  EXPECT_DOUBLE_EQ(entropy_bound(DType::kBf16, c.data(), 1000), 0.5);
  std::vector<uint16_t> two(1000);
  for (size_t i = 0; i < two.size(); ++i) two[i] = i % 2 ? 0x3F80 : 0x4000;  // exponents 127, 128
  EXPECT_NEAR(entropy_bound(DType::kBf16, two.data(), two.size()), 9.0 / 16, 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Corruption: every region of a stream, truncation, a short destination.

struct Sample {
  DType t = DType::kBf16;
  uint64_t count = 3 * 1024 + 100;
  Bytes data, stream;
  Sample(bool checksum, int table = kTablePerBlock, DType type = DType::kBf16) : t(type) {
    data = make_data(t, osub::DataKind::kNormal, count, 21);
    EncodeOptions opt;
    opt.log2_block = 10;
    opt.checksum = checksum;
    opt.table = table;
    stream = compress_ok(t, data.data(), count, opt);
  }
  Status decode(const Bytes& s, uint64_t len, Bytes* out) const {
    out->assign(count * format::elem_bytes(t), 0);
    uint64_t got;
    return decompress(s.data(), len, out->data(), out->size(), &got);
  }
};

// Bytes whose content the format leaves free: padding after the raw sub-planes, the block table,
// the plane tables (SHARED_TABLE), inside (per-block tables) and at the end of each block.
std::vector<bool> padding_map(const Sample& x) {
  const Bytes& s = x.stream;
  std::vector<bool> pad(s.size(), false);
  uint64_t raw_end = 32 + format::raw_subplane_bytes(x.t, x.count, 0);
  for (uint64_t i = raw_end; i < format::align_up(raw_end); ++i) pad[i] = true;
  const uint64_t co = format::coded_offset(x.t, x.count);
  const uint64_t nb = format::total_blocks(x.t, x.count, 10);
  for (uint64_t i = co + 16 + 8 * nb; i < co + format::block_data_offset(x.t, x.count, 10); ++i) pad[i] = true;
  uint64_t data = co + format::block_data_offset(x.t, x.count, 10), start = 0;
  const bool shared = is_shared(s);
  if (shared) {
    for (int p = 0; p < format::planes(x.t); ++p) {
      int nsym = 0;
      for (int i = 0; i < 32; ++i) nsym += std::popcount(s[data + i]);
      uint64_t fe = 32 + 2 * nsym;
      for (uint64_t i = fe; i < format::align_up(fe); ++i) pad[data + i] = true;
      data += format::align_up(fe);
    }
  }
  for (uint64_t k = 0; k < nb; ++k) {
    const uint64_t entry = load64(s.data() + co + 16 + 8 * k), end = entry & ~uint64_t{1};
    const uint8_t* blk = s.data() + data + start;
    int nsym = 0;
    for (int i = 0; i < 32; ++i) nsym += std::popcount(blk[i]);
    uint64_t fe = 32 + 2 * nsym;
    if (!shared || (entry & 1))  // a head of its own: padding to 4 after the frequencies
      for (uint64_t i = fe; i < format::align_up(fe, 4); ++i) pad[data + start + i] = true;
    // The last words end somewhere in the final 16 bytes; flips there may only hit padding.
    for (uint64_t i = end - 16; i < end; ++i) pad[data + i] = true;
    start = end;
  }
  return pad;
}

constexpr int kTableForms[] = {kTablePerBlock, kTableShared};
std::string table_name(int table) { return table == kTableShared ? "shared" : "per block"; }

TEST(CodecCpuCorrupt, EveryFlippedBitIsDetectedWithChecksum) {
  for (int table : kTableForms) {
    SCOPED_TRACE(table_name(table));
    Sample x(true, table);
    ASSERT_FALSE(is_stored(x.stream));
    std::vector<bool> pad = padding_map(x);
    Bytes out;
    int detected = 0, tried = 0;
    for (uint64_t i = 0; i < x.stream.size(); i += (i < 600 ? 1 : 7)) {
      for (int bit : {0, 3, 7}) {
        Bytes s = x.stream;
        s[i] ^= static_cast<uint8_t>(1 << bit);
        Status st = x.decode(s, s.size(), &out);
        ++tried;
        if (st == Status::kCorruptStream) {
          ++detected;
          continue;
        }
        // A larger count in the header says the data does not fit; nothing else can tell yet.
        if (st == Status::kTruncated && i >= 8 && i < 16) continue;
        ASSERT_EQ(st, Status::kOk) << "byte " << i;
        ASSERT_TRUE(pad[i]) << "flip of byte " << i << " bit " << bit << " not detected";
        ASSERT_EQ(out, x.data) << "flip of byte " << i << " decoded to wrong data";
      }
    }
    EXPECT_GT(detected, tried * 9 / 10);
  }
}

TEST(CodecCpuCorrupt, FlipsWithoutChecksumNeverEscapeTheBuffers) {
  for (int table : kTableForms) {
    SCOPED_TRACE(table_name(table));
    Sample x(false, table);
    Bytes out;
    std::mt19937 g(12);
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes s = x.stream;
      for (int f = 0; f < 1 + trial % 3; ++f) s[g() % s.size()] ^= static_cast<uint8_t>(1u << (g() % 8));
      Status st = x.decode(s, s.size(), &out);
      // kTruncated: a flip raised the count in the header.
      ASSERT_TRUE(st == Status::kOk || st == Status::kCorruptStream || st == Status::kTruncated);
    }
  }
}

TEST(CodecCpuCorrupt, TruncationIsDetected) {
  for (int table : kTableForms) {
    for (bool checksum : {false, true}) {
      SCOPED_TRACE(table_name(table));
      Sample x(checksum, table);
      Bytes out;
      for (uint64_t len = 0; len < x.stream.size(); len += (len < 200 ? 1 : 13))
        ASSERT_EQ(x.decode(x.stream, len, &out), Status::kCorruptStream) << "length " << len;
      // Trailing bytes after a stream are ignored.
      Bytes longer = x.stream;
      longer.resize(longer.size() + 40, 0xEE);
      ASSERT_EQ(x.decode(longer, longer.size(), &out), Status::kOk);
      EXPECT_EQ(out, x.data);
    }
  }
}

TEST(CodecCpuCorrupt, ShortDestinationIsTruncated) {
  Sample x(false);
  for (uint64_t cap : {uint64_t{0}, uint64_t{1}, x.count * 2 - 1}) {
    Bytes out(cap + 1);
    uint64_t got;
    EXPECT_EQ(decompress(x.stream.data(), x.stream.size(), out.data(), cap, &got), Status::kTruncated);
  }
  // Compressing into too little room.
  Bytes s(100);
  uint64_t w;
  EXPECT_EQ(compress(x.t, x.data.data(), x.count, s.data(), s.size(), &w), Status::kTruncated);
}

TEST(CodecCpuCorrupt, RandomStreamsBehindAValidHeader) {
  for (int table : kTableForms) {
    SCOPED_TRACE(table_name(table));
    Sample x(false, table);
    std::mt19937 g(13);
    Bytes out;
    for (int trial = 0; trial < 2000; ++trial) {
      Bytes s = x.stream;
      uint64_t from = 32 + g() % (s.size() - 32);
      for (uint64_t i = from; i < s.size(); ++i) s[i] = static_cast<uint8_t>(g());
      Status st = x.decode(s, s.size(), &out);
      ASSERT_TRUE(st == Status::kOk || st == Status::kCorruptStream);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// SHARED_TABLE (version 2): one frequency table per symbol plane for the whole stream.

// Data of any type with its special values: the 32- and 64-bit types from random_patterns, bf16
// from the high halves of fp32 patterns; fp16 and the fp8 types from normal data with one element
// in eight replaced by a NaN with a payload, an infinity, a signed zero or a subnormal.
Bytes special_data(DType t, uint64_t count, uint64_t seed) {
  Bytes out(count * format::elem_bytes(t));
  if (t == DType::kFp32 || t == DType::kBf16) {
    std::vector<uint32_t> v = random_patterns<uint32_t>(count, seed);
    for (uint64_t i = 0; i < count; ++i) {
      if (t == DType::kFp32) {
        std::memcpy(out.data() + 4 * i, &v[i], 4);
      } else {
        const uint16_t h = static_cast<uint16_t>(v[i] >> 16);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }
  if (t == DType::kFp64) {
    std::vector<uint64_t> v = random_patterns<uint64_t>(count, seed);
    if (count) std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  out = make_data(t, osub::DataKind::kNormal, count, seed);
  std::mt19937 g(static_cast<uint32_t>(seed));
  // Per type: a NaN with a payload, +inf, -0, the smallest and the largest subnormal.
  const uint16_t fp16[] = {0x7E5A, 0x7C00, 0x8000, 0x0001, 0x83FF};
  const uint8_t e4m3[] = {0x7F, 0x7E, 0x80, 0x01, 0x87};  // e4m3 has no infinity: 0x7E is its max
  const uint8_t e5m2[] = {0x7D, 0x7C, 0x80, 0x01, 0x83};
  for (uint64_t i = 0; i < count; ++i) {
    if (g() % 8) continue;
    const int k = static_cast<int>(g() % 5);
    if (t == DType::kFp16) {
      std::memcpy(out.data() + 2 * i, &fp16[k], 2);
    } else {
      out[i] = t == DType::kE4m3 ? e4m3[k] : e5m2[k];
    }
  }
  return out;
}

EncodeOptions shared_options(int log2_block) {
  EncodeOptions opt;
  opt.log2_block = log2_block;
  opt.table = kTableShared;
  return opt;
}

TEST(CodecCpuShared, RoundTripsEveryTypeSizeAndBlockSize) {
  int shared = 0;
  for (DType t : kTypes) {
    for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{4095}, uint64_t{4096}, uint64_t{4097}, uint64_t{300001}}) {
      Bytes v = special_data(t, count, count + static_cast<uint64_t>(t));
      for (int lb : {10, 12, 14, 16}) {
        for (bool checksum : {false, true}) {
          for (int threads : {1, 3}) {
            SCOPED_TRACE(type_name(t) + " count " + std::to_string(count) + " lb " + std::to_string(lb) +
                         (checksum ? " checksum" : "") + " threads " + std::to_string(threads));
            EncodeOptions opt = shared_options(lb);
            opt.checksum = checksum;
            opt.threads = threads;
            Bytes s = round_trip(t, v.data(), count, opt, threads);
            if (!is_stored(s)) {
              ASSERT_TRUE(is_shared(s));
              ASSERT_EQ(s[4], format::kVersionShared);
              ++shared;
            }
            if (::testing::Test::HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_GT(shared, 6 * 4 * 4 * 3);  // at least the three largest counts of every type are coded
}

TEST(CodecCpuShared, StreamsDecodeWithTheDocumentedAlgorithm) {
  for (DType t : kTypes) {
    for (int lb : {10, 12, 14}) {
      SCOPED_TRACE(type_name(t) + " lb " + std::to_string(lb));
      const uint64_t count = (uint64_t{5} << lb) + 33;
      Bytes d = make_data(t, osub::DataKind::kNormal, count, 17);
      Bytes s = round_trip(t, d.data(), count, shared_options(lb));
      expect_spec_layout(t, s, d.data(), count);
    }
  }
}

TEST(CodecCpuShared, VersionAndFlags) {
  const uint64_t count = 100000;
  Bytes d = make_data(DType::kBf16, osub::DataKind::kNormal, count, 4);
  StreamInfo info;
  // Shared: version 2 and the flag, which read_header reports.
  EncodeOptions opt = shared_options(16);
  opt.checksum = true;
  Bytes s = round_trip(DType::kBf16, d.data(), count, opt);
  EXPECT_EQ(s[4], format::kVersionShared);
  ASSERT_EQ(read_header(s.data(), s.size(), &info), Status::kOk);
  EXPECT_EQ(info.flags, format::kFlagChecksum | format::kFlagSharedTable);
  EXPECT_EQ(info.total_bytes_if_known, s.size());
  // Auto at log2_block 16 (and the default options) is per block: version 1, no flag, and the
  // same bytes as per block forced.
  for (int lb : {0, 16}) {
    EncodeOptions a;
    a.log2_block = lb;
    Bytes auto16 = round_trip(DType::kBf16, d.data(), count, a);
    EXPECT_EQ(auto16[4], format::kVersion);
    ASSERT_EQ(read_header(auto16.data(), auto16.size(), &info), Status::kOk);
    EXPECT_EQ(info.flags, 0);
    a.table = kTablePerBlock;
    EXPECT_EQ(round_trip(DType::kBf16, d.data(), count, a), auto16);
  }
  // Auto at log2_block 12 and below is shared; per block forced there is version 1.
  for (int lb : {10, 12}) {
    EncodeOptions a;
    a.log2_block = lb;
    Bytes auto12 = round_trip(DType::kBf16, d.data(), count, a);
    EXPECT_TRUE(is_shared(auto12));
    EXPECT_EQ(auto12[4], format::kVersionShared);
    EXPECT_EQ(round_trip(DType::kBf16, d.data(), count, shared_options(lb)), auto12);
    a.table = kTablePerBlock;
    Bytes per_block = round_trip(DType::kBf16, d.data(), count, a);
    EXPECT_FALSE(is_shared(per_block));
    EXPECT_EQ(per_block[4], format::kVersion);
  }
  EncodeOptions a;
  a.log2_block = 13;
  EXPECT_FALSE(is_shared(round_trip(DType::kBf16, d.data(), count, a)));
  // A STORED stream never has the flag, nor version 2.
  std::vector<uint32_t> noise(5000);
  std::mt19937 g(5);
  for (auto& x : noise) x = g();
  Bytes st = round_trip(DType::kFp32, reinterpret_cast<uint8_t*>(noise.data()), noise.size(), shared_options(10));
  ASSERT_TRUE(is_stored(st));
  EXPECT_FALSE(is_shared(st));
  EXPECT_EQ(st[4], format::kVersion);
}

TEST(CodecCpuShared, TableOptionIsValidated) {
  uint8_t buf[256] = {};
  uint64_t w = 0;
  for (int table : {-1, 3}) {
    EncodeOptions bad;
    bad.table = table;
    EXPECT_EQ(compress(DType::kBf16, buf, 4, buf + 64, 128, &w, bad), Status::kInvalidArgument);
  }
}

// Deterministic data whose top byte has skewed exponents, from integer arithmetic alone.
Bytes golden_data(DType t, uint64_t count) {
  const uint64_t eb = format::elem_bytes(t);
  Bytes out(count * eb);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < out.size(); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint32_t r = static_cast<uint32_t>(x >> 32);
    out[i] = i % eb + 1 == eb ? static_cast<uint8_t>((r & 0x80) | (0x3C - std::countr_zero(r | 0x100) % 8))
                              : static_cast<uint8_t>(r >> 8);
  }
  return out;
}

TEST(CodecCpuShared, PerBlockStreamsAreTheVersion1Bytes) {
  // FNV-1a of the streams of every type (5003 elements, checksum, per block) as the encoder wrote
  // them before version 2 existed: a per-block stream must stay version 1 byte for byte.
  const std::pair<int, uint64_t> golden[] = {
      {10, 0x7f3dcfa6db921509ULL}, {12, 0x2b76bc0eea95a780ULL}, {16, 0x9c426d1b272874a2ULL}};
  for (auto [lb, want] : golden) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (DType t : kTypes) {
      Bytes d = golden_data(t, 5003);
      EncodeOptions opt;
      opt.log2_block = lb;
      opt.checksum = true;
      opt.table = kTablePerBlock;
      for (uint8_t b : round_trip(t, d.data(), 5003, opt)) h = (h ^ b) * 0x100000001b3ULL;
    }
    EXPECT_EQ(h, want) << "log2_block " << lb;
  }
}

TEST(CodecCpuShared, SmallBlocksOfBf16AreSmaller) {
  const uint64_t count = (uint64_t{1} << 20) / 2;  // 1 MiB of bf16
  Bytes d = make_data(DType::kBf16, osub::DataKind::kUniform, count, 11);
  EncodeOptions opt = shared_options(12);
  const uint64_t shared = round_trip(DType::kBf16, d.data(), count, opt).size();
  opt.table = kTablePerBlock;
  const uint64_t per_block = round_trip(DType::kBf16, d.data(), count, opt).size();
  std::printf("1 MiB bf16 U[-1,1], log2_block 12: shared %llu bytes, per block %llu bytes\n",
              static_cast<unsigned long long>(shared), static_cast<unsigned long long>(per_block));
  EXPECT_LT(shared, per_block);
}

// A buffer of tensors of different scales (31 blocks in 32 of U[-1, 1], every 32nd of
// U[-1e-6, 1e-6]): blocks whose statistics the plane's table does not follow keep their own (bit 0
// of their block_end entry), the others take the plane's, and the stream is smaller than with a
// table in every block.
TEST(CodecCpuShared, BlocksTheSharedTableDoesNotFitKeepTheirOwn) {
  const uint64_t count = uint64_t{1} << 19, b = 4096;
  Bytes d = make_data(DType::kBf16, osub::DataKind::kUniform, count, 17);
  for (uint64_t i = 0; i < count; ++i) {
    if ((i / b) % 32 != 31) continue;
    float f;
    uint16_t h;
    std::memcpy(&h, d.data() + 2 * i, 2);
    uint32_t u = uint32_t{h} << 16;
    std::memcpy(&f, &u, 4);
    f *= 1e-6f;
    std::memcpy(&u, &f, 4);
    h = static_cast<uint16_t>(u >> 16);
    std::memcpy(d.data() + 2 * i, &h, 2);
  }
  const Bytes s = round_trip(DType::kBf16, d.data(), count, shared_options(12));
  ASSERT_TRUE(is_shared(s));
  expect_spec_layout(DType::kBf16, s, d.data(), count);
  const uint64_t co = format::coded_offset(DType::kBf16, count), nb = count / b;
  int own = 0;
  for (uint64_t k = 0; k < nb; ++k) {
    const bool mine = load64(s.data() + co + 16 + 8 * k) & 1;
    own += mine;
    EXPECT_EQ(mine, k % 32 == 31) << "block " << k;
  }
  EXPECT_EQ(own, static_cast<int>(nb / 32));
  EncodeOptions opt = shared_options(12);
  opt.table = kTablePerBlock;
  EXPECT_LT(s.size(), round_trip(DType::kBf16, d.data(), count, opt).size());
}

TEST(CodecCpuShared, ConstantPlanesCodeToNothing) {
  for (DType t : kTypes) {
    Bytes v = make_data(t, osub::DataKind::kConstant, 100000, 0);
    Bytes s = round_trip(t, v.data(), v.size() / format::elem_bytes(t), shared_options(10));
    EXPECT_TRUE(is_shared(s));
  }
}

TEST(CodecCpuShared, PortableAndSimdPathsAgreeOnAnExternalTable) {
  std::mt19937 g(18);
  ans::BlockEncoder enc(16), enc_portable(16, false);
  ans::BlockDecoder simd(true), portable(false);
  for (int trial = 0; trial < 60; ++trial) {
    uint32_t n = 1 + g() % 65536;
    int pb = 9 + trial % 7;
    Bytes sym(n), out1(n), out2(n);
    int spread = 1 + trial % 31;
    for (auto& s : sym) s = static_cast<uint8_t>(128 + std::countr_zero(g() | (1u << spread)));
    // The table of a wider plane: every symbol of the block and some it does not hold.
    uint32_t counts[256] = {}, freqs[256];
    for (uint8_t s : sym) ++counts[s];
    for (int extra = 0; extra < trial % 9; ++extra) ++counts[g() % 256];
    uint32_t total = 0;
    for (uint32_t c : counts) total += c;
    ans::normalize(counts, total, pb, freqs);
    Bytes table(32 + 512, 0);  // bitmap and frequencies as a plane table holds them
    int k = 0;
    for (int s = 0; s < 256; ++s) {
      if (!freqs[s]) continue;
      table[s / 8] |= static_cast<uint8_t>(1 << (s % 8));
      const uint16_t f = static_cast<uint16_t>(freqs[s]);
      std::memcpy(table.data() + 32 + 2 * k++, &f, 2);
    }
    Bytes blk(format::max_block_bytes(n)), blk2(blk.size());
    uint64_t size = enc.encode(sym.data(), n, pb, blk.data(), blk.size(), freqs);
    ASSERT_GT(size, 0u);
    ASSERT_EQ(enc_portable.encode(sym.data(), n, pb, blk2.data(), blk2.size(), freqs), size);
    ASSERT_EQ(std::memcmp(blk.data(), blk2.data(), size), 0) << "vector and scalar encoders differ";
    ASSERT_EQ(simd.decode(blk.data(), size, pb, n, out1.data(), freqs), Status::kOk);
    ASSERT_EQ(portable.decode(blk.data(), size, pb, n, out2.data(), freqs), Status::kOk);
    ASSERT_EQ(out1, sym);
    ASSERT_EQ(out2, sym);
    ASSERT_TRUE(spec_decode_block(blk.data(), size, pb, n, out2.data(), table.data()));
    ASSERT_EQ(out2, sym);
    // The same coder, back to a block's own table and to the external one again.
    uint64_t own = enc.encode(sym.data(), n, pb, blk2.data(), blk2.size());
    ASSERT_EQ(simd.decode(blk2.data(), own, pb, n, out1.data()), Status::kOk);
    ASSERT_EQ(out1, sym);
    ASSERT_EQ(enc.encode(sym.data(), n, pb, blk2.data(), blk2.size(), freqs), size);
    ASSERT_EQ(std::memcmp(blk.data(), blk2.data(), size), 0);
    ASSERT_EQ(simd.decode(blk.data(), size, pb, n, out1.data(), freqs), Status::kOk);
    ASSERT_EQ(out1, sym);
  }
  // An external table that does not sum to M is corrupt, and is not kept as built.
  uint32_t bad[256] = {};
  bad[3] = 1000;
  bad[4] = 3000;
  Bytes blk(256, 0), out(64);
  EXPECT_EQ(portable.decode(blk.data(), blk.size(), 12, 64, out.data(), bad), Status::kCorruptStream);
  EXPECT_EQ(portable.decode(blk.data(), blk.size(), 12, 64, out.data(), bad), Status::kCorruptStream);
  bad[4] = 0;
  EXPECT_EQ(portable.decode(blk.data(), blk.size(), 12, 64, out.data(), bad), Status::kCorruptStream);
}

// Where the plane tables of a Sample's stream start.
uint64_t tables_at(const Sample& x) {
  return format::coded_offset(x.t, x.count) + format::block_data_offset(x.t, x.count, 10);
}

TEST(CodecCpuShared, CorruptPlaneTablesAreDetected) {
  for (DType t : {DType::kBf16, DType::kFp64}) {
    SCOPED_TRACE(type_name(t));
    Sample x(false, kTableShared, t);
    ASSERT_TRUE(is_shared(x.stream));
    Bytes out;
    ASSERT_EQ(x.decode(x.stream, x.stream.size(), &out), Status::kOk);
    ASSERT_EQ(out, x.data);
    // Each plane's table: bitmap, then the frequencies.
    std::vector<uint64_t> at{tables_at(x)};
    for (int p = 1; p < format::planes(t); ++p) {
      int nsym = 0;
      for (int i = 0; i < 32; ++i) nsym += std::popcount(x.stream[at.back() + i]);
      at.push_back(at.back() + format::shared_table_bytes(nsym));
    }
    for (uint64_t table : at) {
      const uint64_t freqs = table + 32;
      int first = 0;  // the lowest present symbol
      while (!(x.stream[table + first / 8] >> (first % 8) & 1)) ++first;
      Bytes s = x.stream;  // a bitmap bit cleared
      s[table + first / 8] ^= static_cast<uint8_t>(1 << (first % 8));
      EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream) << "bit cleared";
      s = x.stream;  // a bitmap bit set
      int absent = 0;
      while (x.stream[table + absent / 8] >> (absent % 8) & 1) ++absent;
      s[table + absent / 8] ^= static_cast<uint8_t>(1 << (absent % 8));
      EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream) << "bit set";
      s = x.stream;  // a frequency one more: the sum is M + 1
      ++s[freqs];
      EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream) << "sum not M";
      s = x.stream;  // a zero frequency
      s[freqs] = s[freqs + 1] = 0;
      EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream) << "zero frequency";
      s = x.stream;  // a frequency above M
      s[freqs + 1] = 0xFF;
      EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream) << "frequency above M";
      // The stream cut inside the table; and the coded section said to end inside it.
      for (uint64_t cut : {table + 1, table + 31, table + 33, freqs + 7}) {
        EXPECT_EQ(x.decode(x.stream, cut, &out), Status::kCorruptStream) << "cut at " << cut;
        s = x.stream;
        const uint64_t co = format::coded_offset(t, x.count), coded = cut - co;
        std::memcpy(s.data() + co, &coded, 8);
        EXPECT_EQ(x.decode(s, cut, &out), Status::kCorruptStream) << "coded section ends at " << cut;
      }
    }
  }
}

TEST(CodecCpuShared, VersionAndFlagMismatchesAreCorrupt) {
  Sample shared(true, kTableShared), per_block(true, kTablePerBlock);
  Bytes out;
  StreamInfo info;
  auto corrupt = [&](const Bytes& s) {
    EXPECT_EQ(read_header(s.data(), s.size(), &info), Status::kCorruptStream);
    EXPECT_EQ(shared.decode(s, s.size(), &out), Status::kCorruptStream);
  };
  Bytes s = shared.stream;  // version 2 without the flag
  s[6] &= static_cast<uint8_t>(~format::kFlagSharedTable);
  corrupt(s);
  s = per_block.stream;  // version 2 on a per-block stream
  s[4] = format::kVersionShared;
  corrupt(s);
  s = shared.stream;  // version 1 with the flag
  s[4] = format::kVersion;
  corrupt(s);
  s = shared.stream;  // the flag with STORED, version 2
  s[6] |= format::kFlagStored;
  corrupt(s);
  s = shared.stream;  // an unknown flag bit, an unknown version
  s[6] |= 1u << 3;
  corrupt(s);
  for (uint8_t v : {0, 3, 255}) {
    s = shared.stream;
    s[4] = v;
    corrupt(s);
  }
  // A STORED stream given the flag and version 2.
  std::vector<uint32_t> noise(1000);
  std::mt19937 g(7);
  for (auto& n : noise) n = g();
  Bytes st = compress_ok(DType::kFp32, reinterpret_cast<uint8_t*>(noise.data()), noise.size());
  ASSERT_TRUE(is_stored(st));
  st[4] = format::kVersionShared;
  st[6] |= format::kFlagSharedTable;
  EXPECT_EQ(read_header(st.data(), st.size(), &info), Status::kCorruptStream);
  Bytes back(4000);
  uint64_t got;
  EXPECT_EQ(decompress(st.data(), st.size(), back.data(), back.size(), &got), Status::kCorruptStream);
}


// ---------------------------------------------------------------------------------------------
// Fast streams (EncodeOptions::mode = kModeFast; docs/FORMAT.md, "Fast streams").

EncodeOptions fast_opt(bool checksum = false, int threads = 0) {
  EncodeOptions opt;
  opt.mode = kModeFast;
  opt.checksum = checksum;
  opt.threads = threads;
  return opt;
}
bool is_fast(const Bytes& s) { return s.size() >= 32 && s[4] == format::kVersionFast && (s[6] & format::kFlagFast); }

// The symbols of each plane as docs/FORMAT.md's table defines them, from the original data.
std::vector<Bytes> spec_symbols(DType t, const uint8_t* src, uint64_t count) {
  const uint64_t nsym = format::symbols_per_plane(t, count);
  std::vector<Bytes> sym(format::planes(t), Bytes(nsym));
  auto byte = [&](uint64_t i) -> uint32_t { return i < count ? src[i] : 0; };
  for (uint64_t i = 0; i < nsym; ++i) {
    switch (t) {
      case DType::kBf16: case DType::kFp16: {
        uint16_t v;
        std::memcpy(&v, src + 2 * i, 2);
        sym[0][i] = static_cast<uint8_t>(v >> 7);
        break;
      }
      case DType::kFp32: {
        uint32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        sym[0][i] = static_cast<uint8_t>(v >> 23);
        break;
      }
      case DType::kFp64: {
        uint64_t v;
        std::memcpy(&v, src + 8 * i, 8);
        sym[0][i] = static_cast<uint8_t>(v >> 55);
        sym[1][i] = static_cast<uint8_t>(v >> 47);
        break;
      }
      case DType::kE4m3: sym[0][i] = static_cast<uint8_t>((((byte(2 * i) >> 3) & 0xF) << 4) | ((byte(2 * i + 1) >> 3) & 0xF)); break;
      case DType::kE5m2: sym[0][i] = static_cast<uint8_t>((src[i] >> 2) & 0x1F); break;
    }
  }
  return sym;
}

// A decoder of the fast coded section written from docs/FORMAT.md alone: the symbols of every
// plane, and how many chunks took each width and how many symbols were escaped.
struct FastDecoded {
  std::vector<Bytes> sym;
  int widths[9] = {};
  uint64_t escapes = 0;
};
FastDecoded spec_decode_fast(DType t, const Bytes& s) {
  FastDecoded d;
  uint64_t count;
  std::memcpy(&count, s.data() + 8, 8);
  const uint64_t nsym = format::symbols_per_plane(t, count), planes = format::planes(t);
  const uint64_t chunks = (nsym + 4095) / 4096;
  const uint64_t co = 32 + format::raw_bytes(t, count);
  const uint64_t data = co + format::align_up(16 + 8 * chunks * planes);
  EXPECT_EQ(load64(s.data() + co), s.size() - co);
  d.sym.assign(planes, Bytes(nsym));
  uint64_t start = 0;
  for (uint64_t k = 0; k < chunks; ++k) {
    for (uint64_t p = 0; p < planes; ++p) {
      const uint64_t end = load64(s.data() + co + 16 + 8 * (k * planes + p));
      const uint8_t* c = s.data() + data + start;
      const uint64_t n = std::min<uint64_t>(4096, nsym - 4096 * k);
      const int w = c[0];
      d.widths[w & 15]++;
      const uint64_t codes_bytes = format::align_up((n * w + 7) / 8);
      const uint8_t* esc = c + 16 + codes_bytes;
      uint64_t e = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint32_t code = (c[16 + i * w / 8] >> (i * w % 8)) & ((1u << w) - 1);
        if (w == 8) d.sym[p][4096 * k + i] = static_cast<uint8_t>(code);
        else if (code == (1u << w) - 1) d.sym[p][4096 * k + i] = esc[e++];
        else d.sym[p][4096 * k + i] = c[1 + code];
      }
      d.escapes += e;
      EXPECT_EQ(end - start, format::align_up(16 + codes_bytes + e)) << "chunk " << k << " plane " << p;
      start = end;
    }
  }
  EXPECT_EQ(data + start, s.size());
  return d;
}

// Round trip in fast mode, the stream checked against the documented layout and the documented
// symbols; returns the stream.
Bytes fast_round_trip(DType t, const uint8_t* src, uint64_t count, const EncodeOptions& opt, FastDecoded* out = nullptr) {
  Bytes s = round_trip(t, src, count, opt, opt.threads);
  EXPECT_TRUE(is_fast(s));
  EXPECT_FALSE(is_stored(s));
  EXPECT_EQ(s[7], format::kFastLog2Chunk);
  EXPECT_EQ(s[24], 0);
  EXPECT_LE(s.size(), max_compressed_size(t, count));
  EXPECT_LE(s.size(), format::fast_max_stream_bytes(t, count));
  StreamInfo info;
  EXPECT_EQ(read_header(s.data(), s.size(), &info), Status::kOk);
  EXPECT_EQ(info.total_bytes_if_known, s.size());
  EXPECT_EQ(s.size() % 16, 0u);
  FastDecoded d = spec_decode_fast(t, s);
  EXPECT_TRUE(d.sym == spec_symbols(t, src, count)) << "symbols differ from the documented split";
  if (out) *out = d;
  return s;
}

TEST(CodecCpuFast, All16BitPatterns) {
  std::vector<uint16_t> all(65536);
  std::iota(all.begin(), all.end(), 0);
  std::vector<uint16_t> shuffled = all;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  for (DType t : {DType::kBf16, DType::kFp16}) {
    for (auto* v : {&all, &shuffled}) {
      for (bool checksum : {false, true}) {
        FastDecoded d;
        fast_round_trip(t, reinterpret_cast<uint8_t*>(v->data()), v->size(), fast_opt(checksum, 2), &d);
        EXPECT_GT(d.widths[8] + d.escapes, 0u);  // every exponent occurs: no chunk codes them all short
      }
    }
  }
}

TEST(CodecCpuFast, AllFp8BytePairs) {
  Bytes pairs(2 * 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    pairs[2 * i] = static_cast<uint8_t>(i >> 8);
    pairs[2 * i + 1] = static_cast<uint8_t>(i);
  }
  for (DType t : {DType::kE4m3, DType::kE5m2}) {
    fast_round_trip(t, pairs.data(), pairs.size(), fast_opt(true));
    fast_round_trip(t, pairs.data() + 1, pairs.size() - 1, fast_opt());  // odd count, pairs shifted
  }
}

TEST(CodecCpuFast, RandomWidePatternsWithSpecials) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::vector<uint32_t> a = random_patterns<uint32_t>(1'000'003, seed);
    std::vector<uint64_t> b = random_patterns<uint64_t>(500'001, seed);
    FastDecoded d32, d64;
    fast_round_trip(DType::kFp32, reinterpret_cast<uint8_t*>(a.data()), a.size(), fast_opt(seed % 2, 2), &d32);
    fast_round_trip(DType::kFp64, reinterpret_cast<uint8_t*>(b.data()), b.size(), fast_opt(seed % 2, 2), &d64);
    // 1 in 16 patterns has any exponent: escapes in every chunk of width 4.
    EXPECT_GT(d32.escapes, 0u);
    EXPECT_GT(d64.escapes, 0u);
  }
}

TEST(CodecCpuFast, AllEscapeData) {
  // Random bits: about 256 distinct exponent bytes a chunk; every chunk codes 8 bits, and the
  // stream is the input's size plus its heads and tables.
  std::vector<uint16_t> v(100'000);
  std::mt19937 g(5);
  for (auto& x : v) x = static_cast<uint16_t>(g());
  FastDecoded d;
  Bytes s = fast_round_trip(DType::kBf16, reinterpret_cast<uint8_t*>(v.data()), v.size(), fast_opt(), &d);
  EXPECT_EQ(d.widths[8], 25);
  EXPECT_EQ(d.escapes, 0u);
  EXPECT_LT(s.size(), 2 * v.size() * 1.01);
  // 40 distinct exponents a chunk, skewed: width 4 with escapes (more than 15 symbols).
  std::vector<uint16_t> w(50'000);
  for (size_t i = 0; i < w.size(); ++i) {
    const uint32_t r = g();
    const uint32_t e = r % 4 ? 120 + (r >> 8) % 8 : 80 + (r >> 8) % 40;
    w[i] = static_cast<uint16_t>((e << 7) | (g() & 0x807F));
  }
  fast_round_trip(DType::kBf16, reinterpret_cast<uint8_t*>(w.data()), w.size(), fast_opt(true), &d);
  EXPECT_GT(d.widths[4], 0);
  EXPECT_GT(d.escapes, w.size() / 8);
}

TEST(CodecCpuFast, SizesAndSpecials) {
  for (DType t : kTypes) {
    SCOPED_TRACE(type_name(t));
    const uint64_t b = 4096 * (t == DType::kE4m3 ? 2 : 1);  // elements per chunk
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{17}, uint64_t{257}, b - 1, b,
                           b + 1, 3 * b + 17, 7 * b}) {
      for (osub::DataKind kind : {osub::DataKind::kNormal, osub::DataKind::kConstant}) {
        Bytes v = make_data(t, kind, count, count);
        fast_round_trip(t, v.data(), count, fast_opt(count % 2));
      }
    }
  }
}

TEST(CodecCpuFast, UniformBf16RatioAndWidths) {
  const uint64_t count = (uint64_t{1} << 20) / 2;
  for (osub::DataKind kind : {osub::DataKind::kUniform, osub::DataKind::kNormal}) {
    Bytes v = make_data(DType::kBf16, kind, count, 3);
    FastDecoded d;
    Bytes s = fast_round_trip(DType::kBf16, v.data(), count, fast_opt(), &d);
    const double ratio = static_cast<double>(s.size()) / static_cast<double>(v.size());
    std::printf("bf16 %s fast ratio %.4f (widths 2: %d, 4: %d, 8: %d)\n", osub::data_kind_name(kind).data(), ratio,
                d.widths[2], d.widths[4], d.widths[8]);
    // Uniform U[-1,1]: 3 short codes cover 7/8 of the symbols, so 2-bit codes win: 11 bits of 16.
    if (kind == osub::DataKind::kUniform) {
      EXPECT_LE(ratio, 0.75);
      EXPECT_EQ(d.widths[2], 128);
    } else {
      EXPECT_LE(ratio, 0.78);
    }
  }
}

TEST(CodecCpuFast, ThreadsAndAlignmentDoNotChangeTheStream) {
  const uint64_t count = 20 * 4096 + 3;
  for (DType t : {DType::kBf16, DType::kFp64, DType::kE4m3}) {
    Bytes v = make_data(t, osub::DataKind::kNormal, count, 9);
    Bytes one = fast_round_trip(t, v.data(), count, fast_opt(true, 1));
    for (int threads : {2, 3, 7})
      EXPECT_EQ(fast_round_trip(t, v.data(), count, fast_opt(true, threads)), one) << threads << " threads";
    Bytes src(v.size() + 3);
    std::memcpy(src.data() + 3, v.data(), v.size());
    Bytes s(max_compressed_size(t, count) + 5);
    uint64_t written = 0;
    ASSERT_EQ(compress(t, src.data() + 3, count, s.data() + 5, s.size() - 5, &written, fast_opt(true)), Status::kOk);
    EXPECT_TRUE(Bytes(s.begin() + 5, s.begin() + 5 + written) == one);
  }
}

TEST(CodecCpuFast, ModeIsValidatedAndDefaultIsAns) {
  Bytes v = make_data(DType::kBf16, osub::DataKind::kNormal, 10000, 1);
  Bytes ans = compress_ok(DType::kBf16, v.data(), 10000);
  EXPECT_FALSE(is_fast(ans));
  EXPECT_EQ(ans[4], format::kVersion);
  Bytes out(max_compressed_size(DType::kBf16, 10000));
  uint64_t written = 0;
  EncodeOptions opt;
  opt.mode = 2;
  EXPECT_EQ(compress(DType::kBf16, v.data(), 10000, out.data(), out.size(), &written, opt), Status::kInvalidArgument);
  opt.mode = -1;
  EXPECT_EQ(compress(DType::kBf16, v.data(), 10000, out.data(), out.size(), &written, opt), Status::kInvalidArgument);
  // A destination too small.
  Bytes s = compress_ok(DType::kBf16, v.data(), 10000, fast_opt());
  EXPECT_EQ(compress(DType::kBf16, v.data(), 10000, out.data(), s.size() - 16, &written, fast_opt()), Status::kTruncated);
  EXPECT_EQ(compress(DType::kBf16, v.data(), 10000, out.data(), 40, &written, fast_opt()), Status::kTruncated);
}

struct FastSample {
  DType t;
  uint64_t count;
  Bytes data, stream;
  FastSample(DType type, bool checksum, uint64_t n = 3 * 4096 + 100) : t(type), count(n) {
    data = make_data(t, osub::DataKind::kNormal, count, 21);
    // Some escapes: a few exponents far from the rest.
    for (uint64_t i = 0; i < data.size(); i += 97) data[i] ^= 0x40;
    stream = compress_ok(t, data.data(), count, fast_opt(checksum));
  }
  Status decode(const Bytes& s, uint64_t len, Bytes* out) const {
    out->assign(count * format::elem_bytes(t), 0);
    uint64_t got;
    return decompress(s.data(), len, out->data(), out->size(), &got);
  }
};

TEST(CodecCpuFastCorrupt, FlipsAreDetectedOrHarmless) {
  // With a checksum every flip either fails or decodes to the original (a flip in padding, in an
  // unused table slot or in unused code bits); never wrong data.
  for (DType t : {DType::kBf16, DType::kFp64, DType::kE5m2}) {
    SCOPED_TRACE(type_name(t));
    FastSample x(t, true);
    Bytes out;
    int detected = 0, tried = 0;
    for (uint64_t i = 0; i < x.stream.size(); i += (i < 600 ? 1 : 5)) {
      for (int bit : {0, 3, 7}) {
        Bytes s = x.stream;
        s[i] ^= static_cast<uint8_t>(1 << bit);
        const Status st = x.decode(s, s.size(), &out);
        ++tried;
        if (st == Status::kCorruptStream) {
          ++detected;
          continue;
        }
        if (st == Status::kTruncated && i >= 8 && i < 16) continue;
        ASSERT_EQ(st, Status::kOk) << "byte " << i;
        ASSERT_EQ(out, x.data) << "flip of byte " << i << " bit " << bit << " decoded to wrong data";
      }
    }
    EXPECT_GT(detected, tried * 3 / 4);
  }
}

TEST(CodecCpuFastCorrupt, FlipsWithoutChecksumNeverEscapeTheBuffers) {
  FastSample x(DType::kBf16, false);
  Bytes out;
  std::mt19937 g(12);
  for (int trial = 0; trial < 3000; ++trial) {
    Bytes s = x.stream;
    for (int f = 0; f < 1 + trial % 3; ++f) s[g() % s.size()] ^= static_cast<uint8_t>(1u << (g() % 8));
    const Status st = x.decode(s, s.size(), &out);
    ASSERT_TRUE(st == Status::kOk || st == Status::kCorruptStream || st == Status::kTruncated);
  }
}

TEST(CodecCpuFastCorrupt, TruncationAndHeaderFields) {
  FastSample x(DType::kFp32, false);
  Bytes out;
  for (uint64_t len = 0; len < x.stream.size(); len += (len < 64 ? 1 : 13))
    ASSERT_EQ(x.decode(x.stream, len, &out), Status::kCorruptStream) << len;
  ASSERT_EQ(x.decode(x.stream, x.stream.size(), &out), Status::kOk);
  auto corrupt = [&](Bytes s) { EXPECT_EQ(x.decode(s, s.size(), &out), Status::kCorruptStream); };
  Bytes s = x.stream;
  s[4] = format::kVersion;  // the FAST flag in version 1
  corrupt(s);
  s = x.stream;
  s[6] |= format::kFlagStored;
  corrupt(s);
  s = x.stream;
  s[6] |= format::kFlagSharedTable;
  corrupt(s);
  s = x.stream;
  s[6] &= static_cast<uint8_t>(~format::kFlagFast);  // version 3 without the flag
  corrupt(s);
  for (uint8_t lb : {10, 11, 13, 16}) {
    s = x.stream;
    s[7] = lb;
    corrupt(s);
  }
  s = x.stream;
  s[24] = 11;  // a precision
  corrupt(s);
  // A width that is not 2, 4 or 8 in the first chunk; a chunk end moved by 16.
  const uint64_t co = format::coded_offset(x.t, x.count);
  const uint64_t data = co + format::block_data_offset(x.t, x.count, format::kFastLog2Chunk);
  for (uint8_t w : {0, 1, 3, 6, 16}) {
    s = x.stream;
    s[data] = w;
    corrupt(s);
  }
  s = x.stream;
  s[co + 16] += 16;
  corrupt(s);
  // Another ANS stream's version bits on a fast body.
  s = x.stream;
  s[4] = format::kVersionShared;
  corrupt(s);
  // A short destination.
  out.assign(x.data.size() - 1, 0);
  uint64_t got;
  EXPECT_EQ(decompress(x.stream.data(), x.stream.size(), out.data(), out.size(), &got), Status::kTruncated);
}

TEST(CodecCpuFastCorrupt, RandomChunksBehindAValidHeader) {
  FastSample x(DType::kBf16, false);
  const uint64_t co = format::coded_offset(x.t, x.count);
  const uint64_t data = co + format::block_data_offset(x.t, x.count, format::kFastLog2Chunk);
  std::mt19937 g(4);
  Bytes out;
  int ok = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    Bytes s = x.stream;
    for (uint64_t i = data; i < s.size(); ++i) s[i] = static_cast<uint8_t>(g());
    if (trial % 2) s[data] = static_cast<uint8_t>(2 << (g() % 3));  // a valid width, random codes
    const Status st = x.decode(s, s.size(), &out);
    ASSERT_TRUE(st == Status::kOk || st == Status::kCorruptStream);
    ok += st == Status::kOk;
  }
  EXPECT_LT(ok, 2000);
}

}  // namespace
}  // namespace mpizip::kernels::cpu
