// The reductions' arithmetic (kernels/reduce.h) and the CPU reduce: bf16, fp16 and fp8 (E4M3,
// E5M2) conversions against independent references, fp32 accumulation with one rounding, rank order, NaN and signed
// zeros in MIN and MAX, in-place use and argument checks.
#include "kernels/reduce_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace mpizip::kernels {
namespace {

using format::DType;
using reduce::Op;

float f32(uint32_t u) { return reduce::f32_from_bits(u); }

// bf16 reference: the nearer of the two bf16 values around f (truncated and the next one up), ties
// to the even one; the value past the largest finite one is infinity, taken as 2^128 for the
// distance.
uint16_t bf16_reference(float f) {
  const uint32_t u = reduce::f32_bits(f);
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7FFFFFFFu;
  const uint32_t lo = mag & 0xFFFF0000u, hi = lo + 0x10000u;
  auto value = [](uint32_t bits) {
    return bits >= 0x7F800000u ? std::ldexp(1.0, 128) : static_cast<double>(f32(bits));
  };
  const double x = static_cast<double>(f32(mag));
  const double dlo = x - value(lo), dhi = value(hi) - x;
  const uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo >> 16) & 1 ? hi : lo);
  return static_cast<uint16_t>((sign | pick) >> 16);
}

TEST(ReduceMath, Bf16RoundsToNearestEven) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) {
    const float f = f32(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    ASSERT_EQ(reduce::f32_to_bf16(f), bf16_reference(f)) << std::hex << u;
  }
  // Ties, around them, and the edges.
  for (uint32_t hi :
       {0x3F80u, 0x3F81u, 0x0000u, 0x0001u, 0x7F7Eu, 0x7F7Fu, 0x8000u, 0xBF80u, 0xFF7Fu}) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const float f = f32(hi << 16 | low);
      ASSERT_EQ(reduce::f32_to_bf16(f), bf16_reference(f)) << std::hex << (hi << 16 | low);
    }
  }
  EXPECT_EQ(reduce::f32_to_bf16(f32(0x3F808000u)), 0x3F80);  // tie, even below
  EXPECT_EQ(reduce::f32_to_bf16(f32(0x3F818000u)), 0x3F82);  // tie, even above
  EXPECT_EQ(reduce::f32_to_bf16(f32(0x7F7F8000u)), 0x7F80);  // overflow to infinity
  EXPECT_EQ(reduce::f32_to_bf16(INFINITY), 0x7F80);
  EXPECT_EQ(reduce::f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(reduce::f32_to_bf16(std::nanf("")), reduce::kCanonicalNaN16);
  EXPECT_EQ(reduce::f32_to_bf16(f32(0xFFC12345u)), reduce::kCanonicalNaN16);
}

TEST(ReduceMath, Bf16WidensExactly) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    EXPECT_EQ(reduce::f32_bits(reduce::bf16_to_f32(static_cast<uint16_t>(h))), h << 16);
  }
}

// fp16 against the compiler's _Float16, which converts with IEEE round-to-nearest-even.
TEST(ReduceMath, Fp16MatchesIeee) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    _Float16 x;
    const uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&x, &bits, 2);
    const float want = static_cast<float>(x);
    const float got = reduce::fp16_to_f32(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    ASSERT_EQ(reduce::f32_bits(got), reduce::f32_bits(want)) << std::hex << h;
  }
  auto check = [](uint32_t u) {
    const float f = f32(u);
    if (std::isnan(f)) return;
    const _Float16 x = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &x, 2);
    ASSERT_EQ(reduce::f32_to_fp16(f), want) << std::hex << u;
  };
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) check(static_cast<uint32_t>(u));
  // Every exponent where fp16 results are normal, subnormal, or round to zero or infinity, with
  // mantissas at and around the rounding points.
  for (uint32_t e = 0x60; e <= 0x90; ++e) {
    for (uint32_t m :
         {0x000000u, 0x000001u, 0x000FFFu, 0x001000u, 0x001001u, 0x002000u, 0x003000u, 0x3FF000u,
          0x400000u, 0x7FE000u, 0x7FF000u, 0x7FFFFFu, 0x0FFFFFu, 0x100000u}) {
      check(e << 23 | m);
      check(0x80000000u | e << 23 | m);
    }
  }
  EXPECT_EQ(reduce::f32_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(reduce::f32_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(reduce::f32_to_fp16(std::nanf("")), reduce::kCanonicalNaN16);
}

// Reduces one element per input: inputs[r] is rank r's value.
template <typename S>
S fold1(DType t, Op op, std::initializer_list<S> per_rank) {
  std::vector<S> v(per_rank);
  std::vector<const void*> in;
  for (const S& x : v) in.push_back(&x);
  S out{};
  EXPECT_EQ(cpu::reduce(reduce::type_of(t), op, in.data(), static_cast<int>(in.size()), &out, 1), Status::kOk);
  return out;
}

uint16_t bf16(float f) { return reduce::f32_to_bf16(f); }

// The engine's word-at-a-time fold of 8- and 16-bit integers gives Fold's bits in every lane:
// every pair of bytes in every lane position (the other lanes random), and random 16-bit pairs
// with the carries that cross a lane's top bit.
template <reduce::Type T, Op O>
void check_word_fold(uint32_t* rng) {
  using W = reduce::WordFold<T, O>;
  using F = reduce::Fold<T, O>;
  using S = typename F::Storage;
  static_assert(W::kWords);
  constexpr int kLanes = 4 / sizeof(S);
  auto next_rand = [rng] {
    *rng = *rng * 1664525u + 1013904223u;
    return *rng;
  };
  auto check = [&](uint32_t a, uint32_t x) {
    S la[kLanes], lx[kLanes], want[kLanes];
    std::memcpy(la, &a, 4);
    std::memcpy(lx, &x, 4);
    for (int i = 0; i < kLanes; ++i) want[i] = F::last(F::next(F::first(la[i]), lx[i]));
    const uint32_t got = W::next(a, x);
    ASSERT_EQ(std::memcmp(&got, want, 4), 0) << std::hex << a << " " << x;
  };
  if constexpr (sizeof(S) == 1) {
    for (int lane = 0; lane < 4; ++lane)
      for (uint32_t u = 0; u < 256; ++u)
        for (uint32_t v = 0; v < 256; ++v) {
          const int shift = 8 * lane;
          const uint32_t keep = ~(0xffu << shift);
          check((next_rand() & keep) | (u << shift), (next_rand() & keep) | (v << shift));
        }
  } else {
    const uint32_t edges[] = {0, 1, 0x7fff, 0x8000, 0xffff, 0x7fff8000u, 0xffffffffu, 0x80008000u};
    for (uint32_t a : edges)
      for (uint32_t x : edges) check(a, x);
    for (int i = 0; i < 1 << 20; ++i) check(next_rand(), next_rand());
  }
}

TEST(ReduceMath, WordFoldMatchesFoldInEveryLane) {
  using reduce::Type;
  uint32_t rng = 12345;
  check_word_fold<Type::kU8, Op::kSum>(&rng);
  check_word_fold<Type::kI8, Op::kSum>(&rng);
  check_word_fold<Type::kU8, Op::kBand>(&rng);
  check_word_fold<Type::kI8, Op::kBor>(&rng);
  check_word_fold<Type::kU8, Op::kBxor>(&rng);
  check_word_fold<Type::kU16, Op::kSum>(&rng);
  check_word_fold<Type::kI16, Op::kSum>(&rng);
  check_word_fold<Type::kI16, Op::kBxor>(&rng);
  static_assert(!reduce::WordFold<Type::kU8, Op::kMax>::kWords);
  static_assert(!reduce::WordFold<Type::kI32, Op::kSum>::kWords);
  static_assert(!reduce::WordFold<Type::kFp32, Op::kSum>::kWords);
}

// fp8 references from the OCP 8-bit float specification: the value of each code by its fields,
// and rounding as the nearest code of the format, ties to the even code, the value one step past
// the largest finite one counting as the overflow (E5M2's infinity, E4M3's NaN).
uint8_t e4m3_of(float f) { return reduce::f32_to_fp8<4, 3>(f); }
uint8_t e5m2_of(float f) { return reduce::f32_to_fp8<5, 2>(f); }
struct Fp8Format {
  int exp_bits, man_bits;
  uint8_t max_finite;
  bool e4m3() const { return exp_bits == 4; }
  double value(uint8_t code) const {  // by fields; the overflow code gives its formula's value
    const int bias = (1 << (exp_bits - 1)) - 1;
    const int e = (code >> man_bits) & ((1 << exp_bits) - 1), m = code & ((1 << man_bits) - 1);
    const double v = e == 0 ? std::ldexp(m, 1 - bias - man_bits)
                            : std::ldexp((1 << man_bits) + m, e - bias - man_bits);
    return (code & 0x80) ? -v : v;
  }
  bool nan(uint8_t c) const {
    const uint8_t a = c & 0x7F;
    return e4m3() ? a == 0x7F : a > 0x7C;
  }
  uint8_t round(float f) const {
    const double x = std::fabs(static_cast<double>(f));
    const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
    uint8_t best = 0;
    const bool beyond = x >= value(max_finite + 1);  // (distances there lose precision)
    for (uint8_t c = 1; c <= max_finite + 1 && !beyond; ++c) {
      const double d = std::fabs(value(c) - x), db = std::fabs(value(best) - x);
      if (d < db || (d == db && (c & 1) == 0)) best = c;
    }
    if (beyond || best == max_finite + 1) return e4m3() ? 0x7F : static_cast<uint8_t>(sign | 0x7C);
    return static_cast<uint8_t>(sign | best);
  }
  uint8_t narrow(float f) const {
    return e4m3() ? e4m3_of(f) : e5m2_of(f);
  }
  float widen(uint8_t c) const { return e4m3() ? reduce::fp8_to_f32<4, 3>(c) : reduce::fp8_to_f32<5, 2>(c); }
};
constexpr Fp8Format kE4m3{4, 3, 0x7E}, kE5m2{5, 2, 0x7B};

TEST(ReduceMath, Fp8WidensExactly) {
  for (const Fp8Format& F : {kE4m3, kE5m2}) {
    for (int c = 0; c < 256; ++c) {
      const float w = F.widen(static_cast<uint8_t>(c));
      if (F.nan(static_cast<uint8_t>(c))) {
        ASSERT_TRUE(std::isnan(w)) << c;
      } else if (!F.e4m3() && (c & 0x7F) == 0x7C) {
        ASSERT_TRUE(std::isinf(w) && std::signbit(w) == ((c & 0x80) != 0)) << c;
      } else {
        ASSERT_EQ(static_cast<double>(w), F.value(static_cast<uint8_t>(c))) << c;
        ASSERT_EQ(std::signbit(w), (c & 0x80) != 0) << c;  // -0 stays -0
        ASSERT_EQ(F.narrow(w), c) << c;                    // every value round-trips
      }
    }
  }
}

TEST(ReduceMath, Fp8RoundsToNearestEven) {
  for (const Fp8Format& F : {kE4m3, kE5m2}) {
    // A sweep of fp32 bit patterns, and every sum and product of two codes (what a fold rounds).
    for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) {
      const float f = f32(static_cast<uint32_t>(u));
      if (std::isnan(f)) continue;
      if (std::isinf(f)) continue;  // below
      ASSERT_EQ(F.narrow(f), F.round(f)) << F.exp_bits << " " << std::hex << u;
    }
    for (int a = 0; a < 256; ++a) {
      for (int b = 0; b < 256; ++b) {
        if (F.nan(a) || F.nan(b) || (!F.e4m3() && ((a & 0x7F) == 0x7C || (b & 0x7F) == 0x7C))) continue;
        const float fa = F.widen(a), fb = F.widen(b);
        for (float f : {fa + fb, fa * fb, fa - fb}) {
          if (std::isinf(f)) continue;
          ASSERT_EQ(F.narrow(f), F.round(f)) << F.exp_bits << " " << a << " " << b << " " << f;
        }
      }
    }
    EXPECT_EQ(F.narrow(std::nanf("")), reduce::kCanonicalNaN8);
    EXPECT_EQ(F.narrow(f32(0xFFC12345u)), reduce::kCanonicalNaN8);
    EXPECT_EQ(F.narrow(-0.0f), 0x80);
    EXPECT_EQ(F.narrow(INFINITY), F.e4m3() ? 0x7F : 0x7C);
    EXPECT_EQ(F.narrow(-INFINITY), F.e4m3() ? 0x7F : 0xFC);
  }
  // The edges by value: E4M3's largest is 448, its midpoint to 480 rounds to it (even), beyond it
  // is NaN; E5M2's largest is 57344, its midpoint to 65536 rounds to infinity (the even code).
  EXPECT_EQ(e4m3_of(464.0f), 0x7E);
  EXPECT_EQ(e4m3_of(std::nextafter(464.0f, 1000.0f)), 0x7F);
  EXPECT_EQ(e4m3_of(-500.0f), 0x7F);
  EXPECT_EQ(e5m2_of(61440.0f), 0x7C);
  EXPECT_EQ(e5m2_of(std::nextafter(61440.0f, 0.0f)), 0x7B);
  EXPECT_EQ(e5m2_of(-70000.0f), 0xFC);
  // Half the least subnormal is a tie with zero (even); just above it rounds up.
  EXPECT_EQ(e4m3_of(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(e4m3_of(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(e5m2_of(-std::ldexp(1.0f, -17)), 0x80);
  EXPECT_EQ(e5m2_of(std::ldexp(3.0f, -17)), 0x02);  // 1.5 quanta: tie, to even
  EXPECT_EQ(e5m2_of(std::ldexp(5.0f, -17)), 0x02);  // 2.5 quanta: tie, to even
}

TEST(ReduceCpu, Fp8FoldsEveryPair) {
  // Every pair of codes through the CPU reduce: SUM and PROD widen, compute in fp32 and round
  // once; MIN and MAX select an operand's own bits (NaN payloads, zero signs and all).
  for (DType t : {DType::kE4m3, DType::kE5m2}) {
    const Fp8Format& F = t == DType::kE4m3 ? kE4m3 : kE5m2;
    std::vector<uint8_t> a(65536), b(65536), out(65536);
    for (int i = 0; i < 65536; ++i) {
      a[i] = static_cast<uint8_t>(i >> 8);
      b[i] = static_cast<uint8_t>(i);
    }
    const void* in[] = {a.data(), b.data()};
    for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax}) {
      ASSERT_EQ(cpu::reduce(reduce::type_of(t), op, in, 2, out.data(), out.size()), Status::kOk);
      for (int i = 0; i < 65536; ++i) {
        const float x = F.widen(a[i]), y = F.widen(b[i]);
        uint8_t want;
        switch (op) {
          case Op::kSum: want = F.narrow(x + y); break;
          case Op::kProd: want = F.narrow(x * y); break;
          case Op::kMin: want = x < y ? a[i] : b[i]; break;
          default: want = x > y ? a[i] : b[i]; break;
        }
        ASSERT_EQ(out[i], want) << static_cast<int>(op) << " " << int(a[i]) << " " << int(b[i]);
      }
    }
  }
}

TEST(ReduceCpu, Bf16SumsInFp32AndRoundsOnce) {
  // 1 + 2^-8 + 2^-8: rounding after each step would give 1 twice (ties to even); one rounding of
  // the fp32 sum gives 1 + 2^-7.
  const uint16_t one = bf16(1.0f), tiny = bf16(std::ldexp(1.0f, -8));
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kSum, {one, tiny, tiny}),
            bf16(1.0f + std::ldexp(1.0f, -7)));
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kSum, {one, tiny, tiny}), 0x3F81);
  const uint16_t h1 = reduce::f32_to_fp16(1.0f), htiny = reduce::f32_to_fp16(std::ldexp(1.0f, -11));
  EXPECT_EQ(fold1<uint16_t>(DType::kFp16, Op::kSum, {h1, htiny, htiny}),
            reduce::f32_to_fp16(1.0f + std::ldexp(1.0f, -10)));
  // PROD too: 3 x 3 x (1/9 rounded) stays in fp32 until the end.
  const uint16_t three = bf16(3.0f), ninth = bf16(1.0f / 9.0f);
  const float acc = 3.0f * 3.0f * reduce::bf16_to_f32(ninth);
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kProd, {three, three, ninth}), bf16(acc));
}

TEST(ReduceCpu, FoldsInRankOrder) {
  // (1e20 + 1) - 1e20 = 0 in fp32; another order would give 1.
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kSum, {1e20f, 1.0f, -1e20f}), 0.0f);
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kSum, {1.0f, 1e20f, -1e20f}), 0.0f);
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kSum, {1e20f, -1e20f, 1.0f}), 1.0f);
  EXPECT_EQ(fold1<double>(DType::kFp64, Op::kSum, {1e300, 1.0, -1e300}), 0.0);
}

TEST(ReduceCpu, MinMaxNaNFollowsTheLastOperand) {
  const float nan = std::nanf("");
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kMax, {nan, 1.0f}), 1.0f);
  EXPECT_TRUE(std::isnan(fold1<float>(DType::kFp32, Op::kMax, {1.0f, nan})));
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kMax, {1.0f, nan, 2.0f}), 2.0f);
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kMax, {3.0f, nan, 2.0f}), 2.0f);
  EXPECT_EQ(fold1<float>(DType::kFp32, Op::kMin, {nan, 1.0f}), 1.0f);
  EXPECT_TRUE(std::isnan(fold1<double>(DType::kFp64, Op::kMin, {1.0, 0.5, std::nan("")})));
  // bf16 keeps the selected operand's bits, NaN payload included.
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kMax, {bf16(1.0f), 0x7FC1}), 0x7FC1);
  EXPECT_EQ(fold1<uint16_t>(DType::kFp16, Op::kMin, {0x3C00, 0xFE01}), 0xFE01);
}

TEST(ReduceCpu, MinMaxTiesTakeTheLaterRank) {
  auto bits = [](float f) { return reduce::f32_bits(f); };
  EXPECT_EQ(bits(fold1<float>(DType::kFp32, Op::kMax, {-0.0f, 0.0f})), bits(0.0f));
  EXPECT_EQ(bits(fold1<float>(DType::kFp32, Op::kMax, {0.0f, -0.0f})), bits(-0.0f));
  EXPECT_EQ(bits(fold1<float>(DType::kFp32, Op::kMin, {0.0f, -0.0f})), bits(-0.0f));
  EXPECT_EQ(bits(fold1<float>(DType::kFp32, Op::kMin, {-0.0f, 0.0f})), bits(0.0f));
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kMax, {0x8000, 0x0000}), 0x0000);
  EXPECT_EQ(fold1<uint16_t>(DType::kFp16, Op::kMin, {0x0000, 0x8000}), 0x8000);
  EXPECT_EQ(bits(fold1<float>(DType::kFp32, Op::kMax, {-1.0f, 2.0f, 0.5f})), bits(2.0f));
}

TEST(ReduceCpu, SumAndProdNaNBecomeCanonical) {
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kSum, {0x7FC1, bf16(1.0f)}), reduce::kCanonicalNaN16);
  EXPECT_EQ(fold1<uint16_t>(DType::kFp16, Op::kProd, {0x7E01, 0x3C00}), reduce::kCanonicalNaN16);
  EXPECT_EQ(fold1<uint16_t>(DType::kBf16, Op::kSum, {0x7F80, 0xFF80}),
            reduce::kCanonicalNaN16);  // inf - inf
}

TEST(ReduceCpu, LongBuffersInPlaceAndEveryType) {
  const uint64_t n = 10007;  // several chunks and a partial one
  for (DType t : {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64}) {
    for (Op op : {Op::kSum, Op::kProd, Op::kMin, Op::kMax}) {
      const size_t eb = format::elem_bytes(t);
      std::vector<std::vector<uint8_t>> in(5, std::vector<uint8_t>(n * eb));
      for (size_t r = 0; r < in.size(); ++r) {
        for (uint64_t i = 0; i < n * eb; ++i)
          in[r][i] = static_cast<uint8_t>((i * 131 + r * 17 + i / 7) & 0x3F);
      }
      std::vector<const void*> ptrs;
      for (auto& v : in) ptrs.push_back(v.data());
      std::vector<uint8_t> out(n * eb);
      ASSERT_EQ(cpu::reduce(reduce::type_of(t), op, ptrs.data(), 5, out.data(), n), Status::kOk);
      // Element by element through the fold of one element must agree.
      for (uint64_t i = 0; i < n; i += 997) {
        std::vector<const void*> one;
        for (auto& v : in) one.push_back(v.data() + i * eb);
        std::vector<uint8_t> e(eb);
        ASSERT_EQ(cpu::reduce(reduce::type_of(t), op, one.data(), 5, e.data(), 1), Status::kOk);
        ASSERT_EQ(std::memcmp(e.data(), out.data() + i * eb, eb), 0) << "element " << i;
      }
      // In place over the first input.
      std::vector<uint8_t> first = in[0];
      ptrs[0] = first.data();
      ASSERT_EQ(cpu::reduce(reduce::type_of(t), op, ptrs.data(), 5, first.data(), n), Status::kOk);
      EXPECT_EQ(first, out);
    }
  }
}

TEST(ReduceCpu, RejectsBadArguments) {
  float x = 1, y = 0;
  const void* in[] = {&x, nullptr};
  EXPECT_EQ(cpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 0, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(cpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 2, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(cpu::reduce(reduce::type_of(DType::kE4m3), Op::kBand, in, 1, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(cpu::reduce(reduce::type_of(DType::kFp32), static_cast<Op>(9), in, 1, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(cpu::reduce(reduce::type_of(DType::kFp32), Op::kSum, in, 1, &y, 0), Status::kOk);
}

}  // namespace
}  // namespace mpizip::kernels
