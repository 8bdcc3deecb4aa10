// The GPU codec against the CPU reference codec: bit-exact round trips GPU->GPU, GPU->CPU and
// CPU->GPU over every 16-bit pattern, every fp8 pair, 10^8 random 32- and 64-bit patterns, sizes
// around block boundaries up to 1 GiB, unaligned pointers, batches, split + encode, both table
// forms (one per block, one per plane: SHARED_TABLE), and thousands of corrupted or truncated
// streams (which must be reported, never fault).
//
// Exits 77 (skipped) when no GPU is present. MPIZIP_GPU_TEST_QUICK=1 shrinks the large cases (for
// compute-sanitizer runs).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "kernels/codec_cpu.h"
#include "kernels/codec_gpu.h"

namespace {

using mpizip::Status;
using mpizip::format::DType;
namespace gpu = mpizip::kernels::gpu;
namespace cpu = mpizip::kernels::cpu;

constexpr DType kAll[] = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64, DType::kE4m3, DType::kE5m2};

gpu::EncodeOptions opts(int lb, int enc = 0, int table = gpu::kTableAuto) {
  gpu::EncodeOptions o;
  o.log2_block = lb;
  o.encoder = enc;
  o.table = table;
  return o;
}
// Encoder instantiations that can write a stream at this block size in this table form (the
// streamed one keeps tables per block).
std::vector<int> encoders_for(int lb, int table) {
  const bool shared = table == gpu::kTableShared || (table == gpu::kTableAuto && lb <= gpu::kMaxSharedLog2Block);
  return shared ? std::vector<int>{1, 2, 3} : std::vector<int>{1, 2, 3, 4};
}
bool header_shared(const std::vector<uint8_t>& s) {
  return s.size() >= 32 && s[4] == mpizip::format::kVersionShared && (s[6] & mpizip::format::kFlagSharedTable);
}

bool quick() { return std::getenv("MPIZIP_GPU_TEST_QUICK") != nullptr; }

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Device memory owned by the test.
class DevBuf {
 public:
  explicit DevBuf(size_t n) : n_(n) {
    if (cudaMalloc(&p_, std::max<size_t>(n, 1)) != cudaSuccess) p_ = nullptr;
  }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(p_); }
  size_t size() const { return n_; }

 private:
  void* p_ = nullptr;
  size_t n_;
};

// One workspace and result slot for the whole test program, big enough for 1 GiB of any type.
struct Env {
  DevBuf ws{gpu::workspace_bytes(DType::kE5m2, uint64_t{1} << 31)};
  DevBuf res{sizeof(gpu::DeviceResult) * gpu::kMaxBatch};
  Env() { EXPECT_EQ(gpu::workspace_init(ws.get(), ws.size(), nullptr), Status::kOk); }
  gpu::DeviceResult* results() const { return reinterpret_cast<gpu::DeviceResult*>(res.get()); }
  std::vector<gpu::DeviceResult> read(int n) const {
    std::vector<gpu::DeviceResult> r(n);
    cudaDeviceSynchronize();
    cudaMemcpy(r.data(), res.get(), n * sizeof(gpu::DeviceResult), cudaMemcpyDeviceToHost);
    return r;
  }
};
Env* g_env = nullptr;

// Stream of `count` elements at host `data`, compressed on the GPU (fused, or split + encode),
// with the source and destination at byte offsets off_src / off_dst from 16-byte alignment.
std::vector<uint8_t> gpu_compress(DType t, const void* data, uint64_t count, gpu::EncodeOptions opt = {},
                                  int off_src = 0, int off_dst = 0, bool staged = false) {
  const uint64_t nb = count * mpizip::format::elem_bytes(t), cap = gpu::max_compressed_size(t, count);
  DevBuf src(nb + 64), dst(cap + 64);
  cudaMemcpy(src.get() + off_src, data, nb, cudaMemcpyHostToDevice);
  cudaMemset(dst.get(), 0xA5, cap + 64);  // poison: every byte of the stream must be written
  Status s;
  if (staged) {
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    s = gpu::split(t, src.get() + off_src, count, dst.get() + off_dst, cap, opt, nullptr, ev);
    if (s == Status::kOk)
      s = gpu::encode(t, src.get() + off_src, count, dst.get() + off_dst, cap, g_env->ws.get(), g_env->ws.size(),
                      g_env->results(), opt, nullptr);
    cudaEventDestroy(ev);
  } else {
    s = gpu::compress(t, src.get() + off_src, count, dst.get() + off_dst, cap, g_env->ws.get(), g_env->ws.size(),
                      g_env->results(), opt, nullptr);
  }
  EXPECT_EQ(s, Status::kOk);
  const gpu::DeviceResult r = g_env->read(1)[0];
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(r.status, 0);
  EXPECT_GT(r.size, 0u);
  EXPECT_LE(r.size, cap);
  std::vector<uint8_t> out(std::min<uint64_t>(r.size, cap));
  cudaMemcpy(out.data(), dst.get() + off_dst, out.size(), cudaMemcpyDeviceToHost);
  return out;
}

// Decodes `stream` on the GPU into a destination of cap bytes; returns the device result.
gpu::DeviceResult gpu_decompress(DType t, const std::vector<uint8_t>& stream, uint64_t cap, std::vector<uint8_t>* out,
                                 int off_src = 0, int off_dst = 0, int max_ctas = 0) {
  DevBuf src(stream.size() + 64), dst(cap + 64);
  cudaMemcpy(src.get() + off_src, stream.data(), stream.size(), cudaMemcpyHostToDevice);
  cudaMemset(dst.get(), 0x5A, cap + 64);
  EXPECT_EQ(gpu::decompress(t, src.get() + off_src, stream.size(), dst.get() + off_dst, cap, g_env->ws.get(),
                            g_env->ws.size(), g_env->results(), max_ctas, nullptr),
            Status::kOk);
  const gpu::DeviceResult r = g_env->read(1)[0];
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  if (out) {
    out->resize(cap + 64);
    cudaMemcpy(out->data(), dst.get(), cap + 64, cudaMemcpyDeviceToHost);
    // Bytes outside the destination must be untouched.
    for (int i = 0; i < off_dst; ++i) EXPECT_EQ((*out)[i], 0x5A);
    out->erase(out->begin(), out->begin() + off_dst);
  }
  return r;
}

// All three directions for one input; the GPU stream is also checked byte for byte against what
// the CPU decoder accepts.
void round_trip(DType t, const void* data, uint64_t count, gpu::EncodeOptions opt = {}, int off_src = 0,
                int off_dst = 0) {
  SCOPED_TRACE(testing::Message() << "dtype " << int(t) << " count " << count << " lb " << opt.log2_block
                                  << " offsets " << off_src << "/" << off_dst);
  const uint64_t nb = count * mpizip::format::elem_bytes(t);
  const std::vector<uint8_t> s = gpu_compress(t, data, count, opt, off_src, off_dst);
  // GPU -> CPU
  std::vector<uint8_t> back(nb + 1);
  uint64_t n = 0;
  ASSERT_EQ(cpu::decompress(s.data(), s.size(), back.data(), nb, &n), Status::kOk);
  ASSERT_EQ(n, count);
  ASSERT_EQ(std::memcmp(back.data(), data, nb), 0);
  // GPU -> GPU
  std::vector<uint8_t> out;
  gpu::DeviceResult r = gpu_decompress(t, s, nb, &out, off_dst, off_src);
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.size, count);
  ASSERT_EQ(std::memcmp(out.data(), data, nb), 0);
  for (int i = 0; i < 16 - off_src; ++i) ASSERT_EQ(out[nb + i], 0x5A) << "write past the destination";
  // CPU -> GPU, with the CPU's defaults (large blocks, prob_bits 12: the search path), with the
  // GPU's precision (the table path), and with one table per plane (SHARED_TABLE).
  for (int pb : {0, 11, -1}) {
    cpu::EncodeOptions co;
    co.prob_bits = pb < 0 ? 10 : pb;
    co.checksum = pb == 0;
    if (pb < 0) co.log2_block = 12, co.table = cpu::kTableShared;
    std::vector<uint8_t> cs(cpu::max_compressed_size(t, count));
    uint64_t w = 0;
    ASSERT_EQ(cpu::compress(t, data, count, cs.data(), cs.size(), &w, co), Status::kOk);
    cs.resize(w);
    r = gpu_decompress(t, cs, nb, &out);
    ASSERT_EQ(r.status, 0) << "CPU stream, prob_bits " << pb;
    ASSERT_EQ(r.size, count);
    ASSERT_EQ(std::memcmp(out.data(), data, nb), 0) << "CPU stream, prob_bits " << pb;
  }
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = rng();
    std::memcpy(&v[i], &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

// Floats whose exponents look like trained weights: mostly small magnitudes, plus special values.
std::vector<uint8_t> realistic(DType t, uint64_t count, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> nd(0.f, 0.05f);
  std::vector<uint8_t> v(count * mpizip::format::elem_bytes(t));
  for (uint64_t i = 0; i < count; ++i) {
    const float f = nd(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    switch (t) {
      case DType::kBf16: case DType::kFp16: {
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(&v[2 * i], &h, 2);
        break;
      }
      case DType::kFp32: std::memcpy(&v[4 * i], &u, 4); break;
      case DType::kFp64: {
        const double d = f;
        std::memcpy(&v[8 * i], &d, 8);
        break;
      }
      default: v[i] = static_cast<uint8_t>(u >> 24) ^ static_cast<uint8_t>(u >> 9 & 0x3); break;
    }
  }
  return v;
}

// bf16 values drawn U[-1, 1] in fp32 and truncated; scale(i) multiplies element i first.
template <typename Scale>
std::vector<uint16_t> uniform_bf16(uint64_t count, uint32_t seed, Scale scale) {
  std::vector<uint16_t> v(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (uint64_t i = 0; i < count; ++i) {
    const float f = u(rng) * scale(i);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    v[i] = static_cast<uint16_t>(b >> 16);
  }
  return v;
}
std::vector<uint16_t> uniform_bf16(uint64_t count, uint32_t seed) {
  return uniform_bf16(count, seed, [](uint64_t) { return 1.f; });
}

TEST(CodecGpuRoundTrip, All16BitPatterns) {
  std::vector<uint16_t> v(65536);
  for (int i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  std::shuffle(v.begin(), v.end(), std::mt19937(1));
  for (DType t : {DType::kBf16, DType::kFp16})
    for (int lb : {10, 14})
      for (int table : {gpu::kTablePerBlock, gpu::kTableAuto})
        for (int enc : encoders_for(lb, table)) round_trip(t, v.data(), v.size(), opts(lb, enc, table));
}

TEST(CodecGpuRoundTrip, AllFp8BytePairs) {
  std::vector<uint8_t> v(2 * 65536);
  for (int i = 0; i < 65536; ++i) v[2 * i] = static_cast<uint8_t>(i), v[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  for (DType t : {DType::kE4m3, DType::kE5m2})
    for (int lb : {10, 13})
      for (int table : {gpu::kTablePerBlock, gpu::kTableAuto})
        for (int enc : encoders_for(lb, table)) {
          round_trip(t, v.data(), v.size(), opts(lb, enc, table));
          round_trip(t, v.data(), v.size() - 1, opts(lb, enc, table));  // odd count: the last pair is completed with zero
        }
}

// Random bit patterns hold every NaN payload, both zeros, infinities and subnormals.
void random_patterns(DType t) {
  const uint64_t count = quick() ? 1000003 : 100000000;
  const std::vector<uint8_t> v = random_bytes(count * mpizip::format::elem_bytes(t), 7);
  round_trip(t, v.data(), count);
}
TEST(CodecGpuRoundTrip, HundredMillionRandom32BitPatterns) { random_patterns(DType::kFp32); }
TEST(CodecGpuRoundTrip, HundredMillionRandom64BitPatterns) { random_patterns(DType::kFp64); }

TEST(CodecGpuRoundTrip, SpecialValues) {
  const uint32_t f32[] = {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 1, 0x807FFFFFu};
  std::vector<uint32_t> v;
  for (int r = 0; r < 5000; ++r) v.insert(v.end(), std::begin(f32), std::end(f32));
  round_trip(DType::kFp32, v.data(), v.size());
  std::vector<uint64_t> d;
  for (uint32_t x : f32) d.push_back((uint64_t{x} << 32) | x);
  for (int r = 0; r < 12; ++r) d.insert(d.end(), d.begin(), d.begin() + 9);
  round_trip(DType::kFp64, d.data(), d.size());
}

TEST(CodecGpuRoundTrip, SizesAroundBlockBoundaries) {
  for (DType t : kAll) {
    const auto v = realistic(t, 70000, 3);
    for (int table : {gpu::kTablePerBlock, gpu::kTableShared})
      for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 7ull, 511ull, 513ull, 1023ull, 1024ull, 1025ull, 2049ull, 8191ull,
                         16384ull, 16385ull, 40001ull, 65536ull, 65537ull, 70000ull})
        round_trip(t, v.data(), n, opts(10, 0, table));
    round_trip(t, v.data(), 70000);
  }
}

TEST(CodecGpuRoundTrip, EveryBlockSizeAndPrecision) {
  for (DType t : kAll) {
    const auto v = realistic(t, 200001, 5);
    for (int lb = 10; lb <= 16; ++lb)
      for (int pb = 9; pb <= 11; ++pb) {
        gpu::EncodeOptions o = opts(lb);
        o.prob_bits = pb;
        round_trip(t, v.data(), 200001, o);
        if (lb <= gpu::kMaxSharedLog2Block) {
          o.table = gpu::kTablePerBlock;
          round_trip(t, v.data(), 200001, o);
        }
      }
  }
}

TEST(CodecGpuRoundTrip, UnalignedPointers) {
  for (DType t : kAll) {
    const int eb = static_cast<int>(mpizip::format::elem_bytes(t));
    const auto v = realistic(t, 30011, 9);
    round_trip(t, v.data(), 30011, {}, eb, 0);
    round_trip(t, v.data(), 30011, {}, 0, 3);
    round_trip(t, v.data(), 30011, {}, 3 * eb, 5);
  }
}

TEST(CodecGpuRoundTrip, ConstantAndChecksum) {
  std::vector<uint16_t> c(300000, 0x3F80);
  round_trip(DType::kBf16, c.data(), c.size());
  const auto v = realistic(DType::kBf16, 300000, 4);
  gpu::EncodeOptions o;
  o.checksum = true;
  round_trip(DType::kBf16, v.data(), 300000, o);
  o.table = gpu::kTablePerBlock;
  round_trip(DType::kBf16, v.data(), 300000, o);
}

TEST(CodecGpuRoundTrip, OneGiB) {
  if (quick()) GTEST_SKIP() << "quick run";
  const uint64_t count = (uint64_t{1} << 30) / 2;
  const std::vector<uint16_t> v = uniform_bf16(count, 11);
  const std::vector<uint8_t> s = gpu_compress(DType::kBf16, v.data(), count);
  EXPECT_LT(s.size(), count * 2 * 0.64);
  // The defaults at this size: blocks of 16384 symbols, each with its own table, at prob_bits 11.
  ASSERT_GE(s.size(), 32u);
  EXPECT_EQ(s[7], 14);
  EXPECT_EQ(s[24], 11);
  std::vector<uint8_t> back(count * 2);
  uint64_t n = 0;
  ASSERT_EQ(cpu::decompress(s.data(), s.size(), back.data(), back.size(), &n), Status::kOk);
  ASSERT_EQ(std::memcmp(back.data(), v.data(), back.size()), 0);
  std::vector<uint8_t> out;
  const gpu::DeviceResult r = gpu_decompress(DType::kBf16, s, count * 2, &out);
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(std::memcmp(out.data(), v.data(), count * 2), 0);
}

// prob_bits by default: 10 where blocks of at most 4096 symbols share their plane's table, 11 for
// larger blocks; an explicit value always wins.
TEST(CodecGpuApi, DefaultPrecisionFollowsTheBlockSize) {
  for (DType t : kAll) {
    for (uint64_t count : {uint64_t{1} << 19, uint64_t{1} << 23, uint64_t{1} << 26, uint64_t{1} << 29}) {
      const gpu::EncodeOptions o;
      const int lb = gpu::resolve_log2_block(t, count, o);
      EXPECT_EQ(gpu::resolve_prob_bits(t, count, o), lb > gpu::kMaxSharedLog2Block ? 11 : 10) << count;
      EXPECT_EQ(gpu::resolve_shared_table(t, count, o), lb <= gpu::kMaxSharedLog2Block) << count;
      gpu::EncodeOptions nine;
      nine.prob_bits = 9;
      EXPECT_EQ(gpu::resolve_prob_bits(t, count, nine), 9);
    }
  }
  EXPECT_EQ(gpu::resolve_prob_bits(DType::kBf16, uint64_t{1} << 29, gpu::EncodeOptions{}), 11);
  EXPECT_EQ(gpu::resolve_prob_bits(DType::kBf16, uint64_t{1} << 19, gpu::EncodeOptions{}), 10);
}

TEST(CodecGpuApi, SplitThenEncodeEqualsFused) {
  for (DType t : kAll) {
    const auto v = realistic(t, 100003, 2);
    for (int sum_table = 0; sum_table < 4; ++sum_table) {
      const bool sum = sum_table & 1;
      gpu::EncodeOptions o;
      o.checksum = sum;
      o.table = sum_table & 2 ? gpu::kTablePerBlock : gpu::kTableAuto;
      const auto a = gpu_compress(t, v.data(), 100003, o);
      const auto b = gpu_compress(t, v.data(), 100003, o, 0, 0, true);
      EXPECT_EQ(a, b);
      const auto c = gpu_compress(t, v.data(), 100, o, 0, 0, true);  // STORED
      EXPECT_EQ(c, gpu_compress(t, v.data(), 100, o));
    }
  }
}

// The encoder's instantiations (EncodeOptions::encoder) write the same stream, fused or split then
// encoded, from aligned and unaligned buffers, with and without a checksum, at block sizes the
// launcher gives any of them; and each stream decodes on the CPU and the GPU.
TEST(CodecGpuApi, EveryEncoderInstantiationWritesTheSameStream) {
  for (DType t : kAll) {
    const int eb = static_cast<int>(mpizip::format::elem_bytes(t));
    const auto v = realistic(t, 300007, 12);
    for (int lb_table : {12 * 4 + gpu::kTableAuto, 12 * 4 + gpu::kTablePerBlock, 14 * 4 + gpu::kTableAuto})
      for (bool sum : {false, true})
        for (int off : {0, eb}) {
          const int lb = lb_table / 4, table = lb_table % 4;
          SCOPED_TRACE(testing::Message() << "dtype " << int(t) << " lb " << lb << " table " << table << " checksum " << sum
                                          << " offset " << off);
          gpu::EncodeOptions o;
          o.log2_block = lb;
          o.checksum = sum;
          o.table = table;
          const auto chosen = gpu_compress(t, v.data(), 300007, o, off, 0);
          EXPECT_EQ(header_shared(chosen), lb <= gpu::kMaxSharedLog2Block && table == gpu::kTableAuto);
          for (int enc : encoders_for(lb, table)) {
            SCOPED_TRACE(testing::Message() << "encoder " << enc);
            o.encoder = enc;
            EXPECT_EQ(chosen, gpu_compress(t, v.data(), 300007, o, off, 0));
            EXPECT_EQ(chosen, gpu_compress(t, v.data(), 300007, o, off, 0, true));  // split + encode
            if (off == 0 && !sum) round_trip(t, v.data(), 300007, o, eb, 5);
          }
        }
  }
  gpu::EncodeOptions bad;
  bad.encoder = 5;
  DevBuf src(20), dst(4096);
  EXPECT_EQ(gpu::compress(DType::kBf16, src.get(), 10, dst.get(), 4096, g_env->ws.get(), g_env->ws.size(),
                          g_env->results(), bad, nullptr),
            Status::kInvalidArgument);
  // A shared table with the streamed instantiation, or with blocks above 4096 symbols: refused.
  for (const gpu::EncodeOptions& o : {opts(12, 4, gpu::kTableShared), opts(13, 0, gpu::kTableShared)})
    EXPECT_EQ(gpu::compress(DType::kBf16, src.get(), 10, dst.get(), 4096, g_env->ws.get(), g_env->ws.size(),
                            g_env->results(), o, nullptr),
              Status::kInvalidArgument);
}

// Blocks whose words outgrow the space the encoder keeps for them fall back to the flat table
// (every symbol 2^(PB-8)): at 65536-symbol blocks and PB 11, symbols the sampled counts never see
// (3 in 4 here, each present, so each at frequency 1: 11 bits) need more than it keeps. Every
// instantiation gives up on the same blocks and writes the same stream, and the fallback is checked
// to have been taken.
TEST(CodecGpuApi, EveryEncoderFallsBackOnTheSameBlocks) {
  constexpr uint64_t kCount = 300007;
  std::vector<uint16_t> v(kCount);
  std::mt19937 rng(3);
  for (uint64_t i = 0; i < kCount; ++i) {
    const uint32_t sym = i % 4 == 0 ? 127 : static_cast<uint32_t>(i * 37 % 256);
    v[i] = static_cast<uint16_t>((sym << 7) | (rng() & 0x807Fu));  // symbol: bits 7-14; raw: the rest
  }
  gpu::EncodeOptions o;
  o.log2_block = 16;
  o.prob_bits = 11;
  const auto chosen = gpu_compress(DType::kBf16, v.data(), kCount, o);
  // The first block's head: the bitmap (all 256 present), then every frequency 2^(11-8).
  const uint64_t head = mpizip::format::coded_offset(DType::kBf16, kCount) +
                        mpizip::format::block_data_offset(DType::kBf16, kCount, 16);
  ASSERT_GT(chosen.size(), head + 32 + 512);
  for (int b = 0; b < 32; ++b) ASSERT_EQ(chosen[head + b], 0xFF) << "bitmap byte " << b;
  for (int s = 0; s < 256; ++s) {
    uint16_t f;
    std::memcpy(&f, &chosen[head + 32 + 2 * s], 2);
    ASSERT_EQ(f, 8) << "symbol " << s << ": the flat table was not taken";
  }
  for (int enc : {1, 2, 3, 4}) {
    SCOPED_TRACE(testing::Message() << "encoder " << enc);
    o.encoder = enc;
    EXPECT_EQ(chosen, gpu_compress(DType::kBf16, v.data(), kCount, o));
    EXPECT_EQ(chosen, gpu_compress(DType::kBf16, v.data(), kCount, o, 0, 0, true));
  }
  o.encoder = 0;
  round_trip(DType::kBf16, v.data(), kCount, o);
}

// The streamed instantiation's words go to scratch after the look-back entries in the workspace:
// forced, it writes there (and so ran); with no room for a slot it is refused, while the launcher's
// own choice then takes a shared-memory instantiation.
TEST(CodecGpuApi, StreamedEncoderUsesTheWorkspaceScratch) {
  // The workspace: 1 KiB of state, 392 KiB of counts and plane tables, the entries; the scratch
  // from ~393.2 KiB. kSlotless holds the first three and no slot.
  constexpr uint64_t kCount = 300007, kWs = 4 << 20, kPoisonFrom = 394 << 10, kSlotless = 400 << 10;
  const auto v = realistic(DType::kBf16, kCount, 12);
  const uint64_t cap = gpu::max_compressed_size(DType::kBf16, kCount);
  DevBuf src(2 * kCount), dst(cap), ws(kWs);
  cudaMemcpy(src.get(), v.data(), 2 * kCount, cudaMemcpyHostToDevice);
  const auto scratch_touched = [&](int enc, uint64_t ws_bytes) -> std::pair<Status, uint64_t> {
    EXPECT_EQ(gpu::workspace_init(ws.get(), kWs, nullptr), Status::kOk);
    cudaMemset(ws.get() + kPoisonFrom, 0xA5, kWs - kPoisonFrom);
    gpu::EncodeOptions o;
    o.log2_block = 14;
    o.encoder = enc;
    const Status s = gpu::compress(DType::kBf16, src.get(), kCount, dst.get(), cap, ws.get(), ws_bytes,
                                   g_env->results(), o, nullptr);
    std::vector<uint8_t> h(kWs - kPoisonFrom);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), ws.get() + kPoisonFrom, h.size(), cudaMemcpyDeviceToHost);
    return {s, static_cast<uint64_t>(std::count_if(h.begin(), h.end(), [](uint8_t b) { return b != 0xA5; }))};
  };
  auto [s4, touched4] = scratch_touched(4, kWs);
  EXPECT_EQ(s4, Status::kOk);
  EXPECT_GT(touched4, 0u) << "the streamed instantiation did not run";
  EXPECT_EQ(g_env->read(1)[0].status, 0);
  auto [s1, touched1] = scratch_touched(1, kWs);
  EXPECT_EQ(s1, Status::kOk);
  EXPECT_EQ(touched1, 0u);
  EXPECT_EQ(scratch_touched(4, kSlotless).first, Status::kInvalidArgument);
  auto [s0, touched0] = scratch_touched(0, kSlotless);
  EXPECT_EQ(s0, Status::kOk);
  EXPECT_EQ(touched0, 0u);
  EXPECT_EQ(g_env->read(1)[0].status, 0);
}

TEST(CodecGpuApi, OneCtaAndBatches) {
  const auto v = realistic(DType::kFp32, 500000, 6);
  gpu::EncodeOptions o;
  o.max_ctas = 1;
  round_trip(DType::kFp32, v.data(), 500000, o);
  // A batch of buffers of different sizes, in one launch each way.
  const uint64_t counts[] = {500000, 0, 1, 33333, 100, 250000, 1025};
  const int n = 7;
  std::vector<std::unique_ptr<DevBuf>> src, dst, out;
  std::vector<gpu::Buffer> cb, db;
  for (int i = 0; i < n; ++i) {
    const uint64_t nb = counts[i] * 4, cap = gpu::max_compressed_size(DType::kFp32, counts[i]);
    src.push_back(std::make_unique<DevBuf>(nb));
    dst.push_back(std::make_unique<DevBuf>(cap));
    out.push_back(std::make_unique<DevBuf>(nb));
    cudaMemcpy(src[i]->get(), v.data() + 4 * i, nb, cudaMemcpyHostToDevice);
    cb.push_back({src[i]->get(), counts[i], dst[i]->get(), cap});
  }
  ASSERT_EQ(gpu::compress_batch(DType::kFp32, cb.data(), n, g_env->ws.get(), g_env->ws.size(), g_env->results(), {},
                                nullptr),
            Status::kOk);
  const auto rc = g_env->read(n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(rc[i].status, 0) << i;
    std::vector<uint8_t> s(rc[i].size);
    cudaMemcpy(s.data(), dst[i]->get(), s.size(), cudaMemcpyDeviceToHost);
    std::vector<uint8_t> back(counts[i] * 4 + 1);
    uint64_t got = 0;
    ASSERT_EQ(cpu::decompress(s.data(), s.size(), back.data(), counts[i] * 4, &got), Status::kOk) << i;
    ASSERT_EQ(std::memcmp(back.data(), v.data() + 4 * i, counts[i] * 4), 0) << i;
    db.push_back({dst[i]->get(), rc[i].size, out[i]->get(), counts[i] * 4});
  }
  ASSERT_EQ(gpu::decompress_batch(DType::kFp32, db.data(), n, g_env->ws.get(), g_env->ws.size(), g_env->results(),
                                  0, nullptr),
            Status::kOk);
  const auto rd = g_env->read(n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(rd[i].status, 0) << i;
    ASSERT_EQ(rd[i].size, counts[i]) << i;
    std::vector<uint8_t> back(counts[i] * 4);
    cudaMemcpy(back.data(), out[i]->get(), back.size(), cudaMemcpyDeviceToHost);
    ASSERT_EQ(std::memcmp(back.data(), v.data() + 4 * i, back.size()), 0) << i;
  }
}

// The decoder maps blocks to its groups CTA-major, or group-major where an item's blocks take
// between half a round and one round of the groups (ans_decode.cuh). With the CTAs capped, a sweep
// of block counts crosses both sides of that rule and several rounds; every count decodes exactly.
TEST(CodecGpuApi, EveryBlockToGroupMappingDecodes) {
  const uint64_t bs = 1024;  // log2_block 10: the decoder's grid assumes blocks of this size
  const auto v = realistic(DType::kBf16, 70 * bs, 8);
  int spread = 0, cta = 0, rounds = 0;
  for (int max_ctas : {0, 3, 8}) {
    for (uint64_t nbe = 1; nbe <= 70; ++nbe) {
      const uint64_t count = nbe * bs - (nbe % 3) * 5;
      SCOPED_TRACE(testing::Message() << "blocks " << nbe << " max_ctas " << max_ctas);
      const uint64_t work = (nbe + 3) / 4, groups = 4 * (max_ctas ? std::min<uint64_t>(work, max_ctas) : work);
      if (nbe > groups) ++rounds;
      else if (2 * nbe > groups) ++spread;
      else ++cta;
      const std::vector<uint8_t> s = gpu_compress(DType::kBf16, v.data(), count, opts(10));
      std::vector<uint8_t> out;
      const gpu::DeviceResult r = gpu_decompress(DType::kBf16, s, count * 2, &out, 0, 0, max_ctas);
      ASSERT_EQ(r.status, 0);
      ASSERT_EQ(r.size, count);
      ASSERT_EQ(std::memcmp(out.data(), v.data(), count * 2), 0);
    }
  }
  EXPECT_GT(spread, 0);
  EXPECT_GT(cta, 0);
  EXPECT_GT(rounds, 0);
}

TEST(CodecGpuApi, ErrorsAreReported) {
  const auto v = realistic(DType::kBf16, 50000, 8);
  const auto s = gpu_compress(DType::kBf16, v.data(), 50000);
  std::vector<uint8_t> out;
  EXPECT_EQ(gpu_decompress(DType::kBf16, s, 50000 * 2 - 2, &out).status, int(Status::kTruncated));
  EXPECT_EQ(gpu_decompress(DType::kFp16, s, 50000 * 2, &out).status, int(Status::kTypeMismatch));
  // Compression into too small a destination.
  DevBuf src(100000), dst(5000);
  cudaMemcpy(src.get(), v.data(), 100000, cudaMemcpyHostToDevice);
  ASSERT_EQ(gpu::compress(DType::kBf16, src.get(), 50000, dst.get(), 5000, g_env->ws.get(), g_env->ws.size(),
                          g_env->results(), {}, nullptr),
            Status::kOk);
  EXPECT_EQ(g_env->read(1)[0].status, int(Status::kTruncated));
  EXPECT_EQ(gpu::compress(DType::kBf16, src.get(), 50000, dst.get(), 5000, g_env->ws.get(), 16, g_env->results(), {},
                          nullptr),
            Status::kInvalidArgument);
  gpu::EncodeOptions bad;
  bad.prob_bits = 12;
  EXPECT_EQ(gpu::compress(DType::kBf16, src.get(), 50000, dst.get(), 5000, g_env->ws.get(), g_env->ws.size(),
                          g_env->results(), bad, nullptr),
            Status::kInvalidArgument);
}

// Corrupted and truncated streams: every one is decoded without a fault (the buffers are checked
// for writes outside them) and, when the checksum is on, reported.
TEST(CodecGpuCorrupt, FlippedAndTruncatedStreams) {
  const int rounds = quick() ? 60 : 1500;
  std::mt19937 rng(5);
  for (DType t : {DType::kBf16, DType::kFp64, DType::kE5m2}) {
    for (int table : {gpu::kTablePerBlock, gpu::kTableShared}) {
      const uint64_t count = 20000;
      const uint64_t nb = count * mpizip::format::elem_bytes(t);
      const auto v = realistic(t, count, 12);
      gpu::EncodeOptions o;
      o.checksum = true;
      o.log2_block = 10;
      o.table = table;
      const auto s = gpu_compress(t, v.data(), count, o);
      EXPECT_EQ(header_shared(s), table == gpu::kTableShared);
      int detected = 0;
      for (int r = 0; r < rounds; ++r) {
        std::vector<uint8_t> c = s;
        const int kind = r % 3;
        if (kind == 0) {
          c[rng() % c.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        } else if (kind == 1) {
          for (int k = 0; k < 8; ++k) c[rng() % c.size()] = static_cast<uint8_t>(rng());
        } else {
          c.resize(rng() % c.size());
        }
        std::vector<uint8_t> out;
        const gpu::DeviceResult res = gpu_decompress(t, c, nb, &out);
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
        for (int i = 0; i < 16; ++i) ASSERT_EQ(out[nb + i], 0x5A) << "write past the destination";
        if (res.status != 0) ++detected;
        else EXPECT_EQ(std::memcmp(out.data(), v.data(), nb), 0) << "undetected corruption, round " << r;
      }
      EXPECT_GT(detected, rounds * 9 / 10);
    }
  }
}

// One table per plane (SHARED_TABLE): taken where blocks have at most 4096 symbols, smaller than a
// table per block, the same stream from run to run and from split + encode (the count stage's
// counts start from zero every launch: the encoder's last group leaves them so, and the count
// stage its counters of finished CTAs), built once by the count stage, and in batches each
// buffer's own tables.
TEST(CodecGpuSharedTable, TakenSmallerAndRepeatable) {
  constexpr uint64_t kCount = 1 << 19;  // 1 MiB of bf16 U[-1, 1]: 4096-symbol blocks
  const std::vector<uint16_t> v = uniform_bf16(kCount, 21);
  EXPECT_TRUE(gpu::resolve_shared_table(DType::kBf16, kCount, {}));
  EXPECT_FALSE(gpu::resolve_shared_table(DType::kBf16, uint64_t{1} << 26, {}));
  const auto shared = gpu_compress(DType::kBf16, v.data(), kCount);
  const auto own = gpu_compress(DType::kBf16, v.data(), kCount, opts(0, 0, gpu::kTablePerBlock));
  ASSERT_TRUE(header_shared(shared));
  ASSERT_FALSE(header_shared(own));
  EXPECT_EQ(own[4], mpizip::format::kVersion);
  std::printf("bf16 U 1 MiB: shared table %zu bytes (ratio %.4f), a table per block %zu (%.4f)\n", shared.size(),
              shared.size() / double(2 * kCount), own.size(), own.size() / double(2 * kCount));
  EXPECT_LT(shared.size() + 2 * kCount / 200, own.size()) << "a shared table saves at least 0.5% here";
  EXPECT_EQ(shared, gpu_compress(DType::kBf16, v.data(), kCount));
  EXPECT_EQ(shared, gpu_compress(DType::kBf16, v.data(), kCount, {}, 0, 0, true));
  round_trip(DType::kBf16, v.data(), kCount);
  // The counts region (after the 1 KiB of state): 784 words a buffer and plane, 264 of sampled
  // counts and presence bitmap, zero again after every launch, then the plane's table as the count
  // stage built it (frequency | cumulative frequency << 16, divisor), then its counter of
  // finished CTAs at 776 (plane 0's), zero again too.
  constexpr size_t kWords = 784, kZeroed = 264, kDone = 776;
  std::vector<uint32_t> counts(64 * 2 * kWords);
  cudaDeviceSynchronize();
  cudaMemcpy(counts.data(), g_env->ws.get() + 1024, counts.size() * 4, cudaMemcpyDeviceToHost);
  size_t left = 0;
  for (size_t w = 0; w < counts.size(); ++w) left += (w % kWords < kZeroed || w % kWords == kDone) && counts[w];
  EXPECT_EQ(left, 0u) << "counts or counters left for the next launch";
  uint32_t fsum = 0, csum_ok = 1, run = 0;
  for (size_t s = 0; s < 256; ++s) {
    const uint32_t e = counts[kZeroed + 2 * s], f = e & 0xFFFF;
    if (f) csum_ok &= (e >> 16) == run;
    fsum += f, run += f;
  }
  EXPECT_EQ(fsum, 1024u) << "the plane's table, as the count stage built it, sums to 2^PB";
  EXPECT_EQ(csum_ok, 1u) << "its cumulative frequencies";
  // A batch: each buffer its own counts and tables, each stream as the buffer compressed alone.
  const uint64_t sizes[] = {kCount, 1, 300, kCount / 3, 0, 5000};
  std::vector<std::unique_ptr<DevBuf>> src, dst;
  std::vector<gpu::Buffer> cb;
  for (uint64_t n : sizes) {
    const uint64_t cap = gpu::max_compressed_size(DType::kBf16, n);
    src.push_back(std::make_unique<DevBuf>(2 * n));
    dst.push_back(std::make_unique<DevBuf>(cap));
    cudaMemcpy(src.back()->get(), v.data() + cb.size() * 7, 2 * n, cudaMemcpyHostToDevice);
    cb.push_back({src.back()->get(), n, dst.back()->get(), cap});
  }
  gpu::EncodeOptions o = opts(12);
  ASSERT_EQ(gpu::compress_batch(DType::kBf16, cb.data(), static_cast<int>(cb.size()), g_env->ws.get(), g_env->ws.size(),
                                g_env->results(), o, nullptr),
            Status::kOk);
  const auto rc = g_env->read(static_cast<int>(cb.size()));
  for (size_t i = 0; i < cb.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "buffer " << i);
    ASSERT_EQ(rc[i].status, 0);
    std::vector<uint8_t> s(rc[i].size);
    cudaMemcpy(s.data(), dst[i]->get(), s.size(), cudaMemcpyDeviceToHost);
    EXPECT_EQ(s, gpu_compress(DType::kBf16, v.data() + i * 7, sizes[i], o));
    EXPECT_EQ(header_shared(s), sizes[i] * 2 > 1024);  // tiny buffers are STORED
  }
}


// The GPU's plane tables against the CPU's optimal frequencies, where rounding alone misses 2^PB by
// most: fp16 distributed as U[-1, 1] (sign and 10 mantissa bits uniform, the exponent below 15
// geometric: ~120 symbols of exponent and 3 mantissa bits in the plane at 1 MiB, the rare ones
// raised to 1). Each codec's SHARED_TABLE stream at 4096-symbol blocks and PB 10: the GPU's
// (sampled counts, one rescaling) within 0.2% of the CPU's (exact counts, the optimal integer
// frequencies, every block coded both ways). With the largest frequency absorbing the whole
// overshoot (v14) the GPU's streams of fp16 U[-1,1] were 1.1% larger (osu-bench/codec at 1 MiB:
// ratio 0.8397 against 0.8307).
TEST(CodecGpuSharedTable, PlaneTablesNearTheCpuOptimum) {
  constexpr uint64_t kCount = 1 << 19;
  std::vector<uint16_t> v(kCount);
  std::mt19937_64 rng(31);
  for (auto& h : v) {
    const uint64_t r = rng();
    int e = 14;
    for (uint64_t g = r >> 24; e > 0 && (g & 1); g >>= 1) --e;
    h = static_cast<uint16_t>(((r >> 63) << 15) | (uint64_t(e) << 10) | (r & 0x3FF));
  }
  const auto gs = gpu_compress(DType::kFp16, v.data(), kCount, opts(12, 0, gpu::kTableShared));
  ASSERT_TRUE(header_shared(gs));
  cpu::EncodeOptions co;
  co.log2_block = 12, co.prob_bits = 10, co.table = cpu::kTableShared;
  std::vector<uint8_t> cs(cpu::max_compressed_size(DType::kFp16, kCount));
  uint64_t w = 0;
  ASSERT_EQ(cpu::compress(DType::kFp16, v.data(), kCount, cs.data(), cs.size(), &w, co), Status::kOk);
  std::printf("fp16 U 1 MiB, shared tables: GPU %zu bytes, CPU %llu (%.4f)\n", gs.size(),
              static_cast<unsigned long long>(w), gs.size() / double(w));
  EXPECT_LT(gs.size(), w + w / 500) << "the GPU's plane table is far from the optimal one";
  round_trip(DType::kFp16, v.data(), kCount, opts(12, 0, gpu::kTableShared));
}

// A buffer of tensors of different scales (31 blocks in 32 of U[-1, 1], every 32nd of
// U[-1e-6, 1e-6]): the blocks the plane's table does not fit keep their own (bit 0 of their
// block_end entry), the others take the plane's; every instantiation decides the same, and the
// stream decodes on both codecs.
TEST(CodecGpuSharedTable, BlocksTheSharedTableDoesNotFitKeepTheirOwn) {
  constexpr uint64_t kCount = 1 << 19, kB = 4096;
  const std::vector<uint16_t> v = uniform_bf16(kCount, 23, [](uint64_t i) { return (i / kB) % 32 == 31 ? 1e-6f : 1.f; });
  const auto s = gpu_compress(DType::kBf16, v.data(), kCount, opts(12));
  ASSERT_TRUE(header_shared(s));
  const uint64_t co = mpizip::format::coded_offset(DType::kBf16, kCount);
  for (uint64_t k = 0; k < kCount / kB; ++k) {
    uint64_t e;
    std::memcpy(&e, &s[co + 16 + 8 * k], 8);
    EXPECT_EQ(e & 1, k % 32 == 31 ? 1u : 0u) << "block " << k;
  }
  for (int enc : {1, 2, 3}) EXPECT_EQ(s, gpu_compress(DType::kBf16, v.data(), kCount, opts(12, enc)));
  EXPECT_LT(s.size(), gpu_compress(DType::kBf16, v.data(), kCount, opts(12, 0, gpu::kTablePerBlock)).size());
  round_trip(DType::kBf16, v.data(), kCount, opts(12));
}


// ---------------------------------------------------------------------------------------------
// Fast mode (EncodeOptions::mode = kModeFast; docs/FORMAT.md, "Fast streams"): the GPU's stream is
// byte for byte the CPU's, each decodes the other's, and each decoder rejects the other coder's
// streams.

gpu::EncodeOptions fast_opts(bool checksum = false, int max_ctas = 0) {
  gpu::EncodeOptions o;
  o.mode = gpu::kModeFast;
  o.checksum = checksum;
  o.max_ctas = max_ctas;
  return o;
}
bool header_fast(const std::vector<uint8_t>& s) {
  return s.size() >= 32 && s[4] == mpizip::format::kVersionFast && (s[6] & mpizip::format::kFlagFast);
}

gpu::DeviceResult gpu_decompress_fast(DType t, const std::vector<uint8_t>& stream, uint64_t cap,
                                      std::vector<uint8_t>* out, int off_src = 0, int off_dst = 0, int max_ctas = 0) {
  DevBuf src(stream.size() + 64), dst(cap + 64);
  cudaMemcpy(src.get() + off_src, stream.data(), stream.size(), cudaMemcpyHostToDevice);
  cudaMemset(dst.get(), 0x5A, cap + 64);
  gpu::DecodeOptions o;
  o.mode = gpu::kModeFast;
  o.max_ctas = max_ctas;
  EXPECT_EQ(gpu::decompress(t, src.get() + off_src, stream.size(), dst.get() + off_dst, cap, g_env->ws.get(),
                            g_env->ws.size(), g_env->results(), o, nullptr),
            Status::kOk);
  const gpu::DeviceResult r = g_env->read(1)[0];
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  if (out) {
    out->resize(cap + 64);
    cudaMemcpy(out->data(), dst.get(), cap + 64, cudaMemcpyDeviceToHost);
    for (int i = 0; i < off_dst; ++i) EXPECT_EQ((*out)[i], 0x5A);
    out->erase(out->begin(), out->begin() + off_dst);
  }
  return r;
}

// GPU -> GPU, GPU -> CPU, CPU -> GPU in fast mode; returns the stream.
std::vector<uint8_t> fast_round_trip(DType t, const void* data, uint64_t count, bool checksum = false, int off_src = 0,
                                     int off_dst = 0, int max_ctas = 0) {
  SCOPED_TRACE(testing::Message() << "fast dtype " << int(t) << " count " << count << " offsets " << off_src << "/"
                                  << off_dst << " ctas " << max_ctas);
  const uint64_t nb = count * mpizip::format::elem_bytes(t);
  const std::vector<uint8_t> s = gpu_compress(t, data, count, fast_opts(checksum, max_ctas), off_src, off_dst);
  EXPECT_TRUE(header_fast(s));
  // The CPU's fast stream is the same bytes.
  cpu::EncodeOptions co;
  co.mode = cpu::kModeFast;
  co.checksum = checksum;
  std::vector<uint8_t> cs(cpu::max_compressed_size(t, count));
  uint64_t w = 0;
  EXPECT_EQ(cpu::compress(t, data, count, cs.data(), cs.size(), &w, co), Status::kOk);
  cs.resize(w);
  EXPECT_TRUE(cs == s) << "GPU and CPU fast streams differ (" << s.size() << " / " << cs.size() << " bytes)";
  // GPU -> CPU
  std::vector<uint8_t> back(nb + 1);
  uint64_t n = 0;
  EXPECT_EQ(cpu::decompress(s.data(), s.size(), back.data(), nb, &n), Status::kOk);
  EXPECT_EQ(n, count);
  EXPECT_EQ(std::memcmp(back.data(), data, nb), 0);
  // GPU -> GPU
  std::vector<uint8_t> out;
  gpu::DeviceResult r = gpu_decompress_fast(t, s, nb, &out, off_dst, off_src, max_ctas);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.size, count);
  EXPECT_EQ(std::memcmp(out.data(), data, nb), 0);
  for (int i = 0; i < 16 - off_src; ++i) EXPECT_EQ(out[nb + i], 0x5A) << "write past the destination";
  // CPU -> GPU
  r = gpu_decompress_fast(t, cs, nb, &out);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.size, count);
  EXPECT_EQ(std::memcmp(out.data(), data, nb), 0);
  return s;
}

TEST(CodecGpuFast, All16BitPatterns) {
  std::vector<uint16_t> v(65536);
  for (int i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  std::vector<uint16_t> shuffled = v;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(1));
  for (DType t : {DType::kBf16, DType::kFp16})
    for (auto* x : {&v, &shuffled})
      for (bool checksum : {false, true}) fast_round_trip(t, x->data(), x->size(), checksum);
}

TEST(CodecGpuFast, AllFp8BytePairs) {
  std::vector<uint8_t> v(2 * 65536);
  for (int i = 0; i < 65536; ++i) v[2 * i] = static_cast<uint8_t>(i), v[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  for (DType t : {DType::kE4m3, DType::kE5m2}) {
    fast_round_trip(t, v.data(), v.size(), true);
    fast_round_trip(t, v.data(), v.size() - 1);
  }
}

TEST(CodecGpuFast, RandomWidePatternsAllEscape) {
  const uint64_t count = quick() ? 300007 : 4000037;
  for (DType t : {DType::kFp32, DType::kFp64, DType::kBf16}) {
    const std::vector<uint8_t> v = random_bytes(count * mpizip::format::elem_bytes(t), 17);
    fast_round_trip(t, v.data(), count, true);
    const auto r = realistic(t, count, 18);
    fast_round_trip(t, r.data(), count);
  }
}

TEST(CodecGpuFast, SpecialValues) {
  const uint32_t f32[] = {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 1, 0x807FFFFFu};
  std::vector<uint32_t> v;
  for (int r = 0; r < 5000; ++r) v.insert(v.end(), std::begin(f32), std::end(f32));
  fast_round_trip(DType::kFp32, v.data(), v.size(), true);
  std::vector<uint64_t> d;
  for (uint32_t x : f32) d.push_back((uint64_t{x} << 32) | x);
  for (int r = 0; r < 12; ++r) d.insert(d.end(), d.begin(), d.begin() + 9);
  fast_round_trip(DType::kFp64, d.data(), d.size());
  std::vector<uint16_t> c(300000, 0x3F80);  // one symbol
  fast_round_trip(DType::kBf16, c.data(), c.size());
}

TEST(CodecGpuFast, SizesOffsetsAndCtas) {
  for (DType t : kAll) {
    const int eb = static_cast<int>(mpizip::format::elem_bytes(t));
    const auto v = realistic(t, 70000, 3);
    for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 7ull, 511ull, 4095ull, 4096ull, 4097ull, 8191ull, 8192ull, 8193ull,
                       40001ull, 70000ull})
      fast_round_trip(t, v.data(), n, n % 2);
    fast_round_trip(t, v.data(), 30011, false, eb, 0);
    fast_round_trip(t, v.data(), 30011, true, 0, 3);
    fast_round_trip(t, v.data(), 30011, false, 3 * eb, 5);
    fast_round_trip(t, v.data(), 70000, true, 0, 0, 1);
    fast_round_trip(t, v.data(), 70000, false, 0, 0, 3);
  }
}

// Chunks built around the edges of the encoder's selection, one after another in one stream (with
// one CTA, every kind follows every other through the same buffers): 16 symbols of equal counts
// (width 4, ranks by symbol alone, the 16th escapes), a tie between ranks 2 and 3 (width 2), a tie
// across ranks 14 and 15 (width 4), exactly 32 and 33 distinct symbols (the warp-wide rank count and
// its 15-round fallback), and random exponents (width 8). Symbols in scrambled order, elements
// shuffled within each chunk; bf16 and fp32, whole and with a partial last chunk.
TEST(CodecGpuFast, WidthsTiesAndDistinctSymbols) {
  const uint32_t C = mpizip::format::kFastChunkSymbols;
  std::mt19937 rng(23);
  std::vector<uint32_t> exps;  // one exponent per element
  for (int r = 0; r < 36; ++r) {
    std::vector<uint32_t> sym(40);
    for (uint32_t i = 0; i < sym.size(); ++i) sym[i] = 90 + i;
    std::shuffle(sym.begin(), sym.end(), rng);
    std::vector<std::pair<uint32_t, uint32_t>> c;  // (symbol, count)
    const int kind = r % 6;
    if (kind == 0) {
      for (int i = 0; i < 16; ++i) c.push_back({sym[i], 256});
    } else if (kind == 1) {
      c = {{sym[0], 1400}, {sym[1], 1400}, {sym[2], 648}, {sym[3], 648}};
    } else if (kind == 2) {
      for (int i = 0; i < 17; ++i) c.push_back({sym[i], i < 14 ? 250u : 198u});
    } else if (kind == 3 || kind == 4) {
      for (int i = 0; i < 29 + kind; ++i) c.push_back({sym[i], i < 3 ? 1200u : 16u});
    } else {
      for (uint32_t i = 0; i < C; ++i) c.push_back({static_cast<uint32_t>(rng() & 0xFF), 1});
    }
    uint32_t sum = 0;
    for (auto& x : c) sum += x.second;
    c[0].second += C - sum;  // the first symbol's count stays the largest
    std::vector<uint32_t> e;
    for (auto& x : c) e.insert(e.end(), x.second, x.first);
    std::shuffle(e.begin(), e.end(), rng);
    exps.insert(exps.end(), e.begin(), e.end());
  }
  const uint64_t count = exps.size();
  std::vector<uint16_t> b(count);
  std::vector<uint32_t> f(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t m = rng();
    b[i] = static_cast<uint16_t>(((m >> 31) << 15) | (exps[i] << 7) | (m & 0x7F));
    f[i] = ((m >> 31) << 31) | (exps[i] << 23) | (m & 0x7FFFFF);
  }
  for (int ctas : {0, 1, 2, 5}) {
    fast_round_trip(DType::kBf16, b.data(), count, ctas == 1, 0, 0, ctas);
    fast_round_trip(DType::kFp32, f.data(), count, ctas == 2, 0, 0, ctas);
  }
  fast_round_trip(DType::kBf16, b.data(), count - 1000, true, 0, 0, 1);
  fast_round_trip(DType::kFp32, f.data(), count - 1000, false, 0, 0, 3);
}

TEST(CodecGpuFast, RatioOfUniformBf16) {
  for (uint64_t count : {uint64_t{1} << 19, quick() ? uint64_t{1} << 20 : uint64_t{1} << 28}) {
    const std::vector<uint16_t> v = uniform_bf16(count, 11);
    const auto s = count > (uint64_t{1} << 20) ? gpu_compress(DType::kBf16, v.data(), count, fast_opts())
                                                : fast_round_trip(DType::kBf16, v.data(), count);
    const double ratio = static_cast<double>(s.size()) / (2.0 * count);
    std::printf("bf16 uniform %llu elements: fast ratio %.4f\n", static_cast<unsigned long long>(count), ratio);
    EXPECT_LE(ratio, 0.75);
    if (count > (uint64_t{1} << 20)) {
      std::vector<uint8_t> out;
      const auto r = gpu_decompress_fast(DType::kBf16, s, 2 * count, &out);
      EXPECT_EQ(r.status, 0);
      EXPECT_EQ(std::memcmp(out.data(), v.data(), 2 * count), 0);
    }
  }
}

TEST(CodecGpuFast, ErrorsAndCoderMismatch) {
  const auto v = realistic(DType::kBf16, 50000, 8);
  const auto fs = gpu_compress(DType::kBf16, v.data(), 50000, fast_opts());
  const auto as = gpu_compress(DType::kBf16, v.data(), 50000);
  std::vector<uint8_t> out;
  EXPECT_EQ(gpu_decompress_fast(DType::kBf16, fs, 50000 * 2 - 2, &out).status, int(Status::kTruncated));
  EXPECT_EQ(gpu_decompress_fast(DType::kFp16, fs, 50000 * 2, &out).status, int(Status::kTypeMismatch));
  EXPECT_EQ(gpu_decompress_fast(DType::kBf16, as, 50000 * 2, &out).status, int(Status::kCorruptStream));
  EXPECT_EQ(gpu_decompress(DType::kBf16, fs, 50000 * 2, &out).status, int(Status::kCorruptStream));
  // After errors the workspace serves the next launch.
  EXPECT_EQ(gpu_decompress_fast(DType::kBf16, fs, 50000 * 2, &out).status, 0);
  EXPECT_EQ(std::memcmp(out.data(), v.data(), 100000), 0);
  DevBuf src(100000), dst(5000);
  cudaMemcpy(src.get(), v.data(), 100000, cudaMemcpyHostToDevice);
  for (uint64_t cap : {uint64_t{5000}, uint64_t{40}}) {
    ASSERT_EQ(gpu::compress(DType::kBf16, src.get(), 50000, dst.get(), cap, g_env->ws.get(), g_env->ws.size(),
                            g_env->results(), fast_opts(), nullptr),
              Status::kOk);
    EXPECT_EQ(g_env->read(1)[0].status, int(Status::kTruncated));
  }
  EXPECT_EQ(gpu_compress(DType::kBf16, v.data(), 50000, fast_opts()), fs);  // and again after the errors
  gpu::EncodeOptions bad = fast_opts();
  bad.mode = 7;
  EXPECT_EQ(gpu::compress(DType::kBf16, src.get(), 50000, dst.get(), 5000, g_env->ws.get(), g_env->ws.size(),
                          g_env->results(), bad, nullptr),
            Status::kInvalidArgument);
  EXPECT_EQ(gpu::split(DType::kBf16, src.get(), 50000, dst.get(), 5000, fast_opts(), nullptr, nullptr),
            Status::kInvalidArgument);
  EXPECT_EQ(gpu::encode(DType::kBf16, src.get(), 50000, dst.get(), 5000, g_env->ws.get(), g_env->ws.size(),
                        g_env->results(), fast_opts(), nullptr),
            Status::kInvalidArgument);
}

TEST(CodecGpuFast, FlippedAndTruncatedStreams) {
  const int rounds = quick() ? 60 : 1500;
  std::mt19937 rng(5);
  for (DType t : {DType::kBf16, DType::kFp64, DType::kE5m2}) {
    const uint64_t count = 20000;
    const uint64_t nb = count * mpizip::format::elem_bytes(t);
    const auto v = realistic(t, count, 12);
    const auto s = gpu_compress(t, v.data(), count, fast_opts(true));
    int detected = 0;
    for (int r = 0; r < rounds; ++r) {
      std::vector<uint8_t> c = s;
      const int kind = r % 3;
      if (kind == 0) {
        c[rng() % c.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
      } else if (kind == 1) {
        for (int k = 0; k < 8; ++k) c[rng() % c.size()] = static_cast<uint8_t>(rng());
      } else {
        c.resize(rng() % c.size());
      }
      std::vector<uint8_t> out;
      const gpu::DeviceResult res = gpu_decompress_fast(t, c, nb, &out);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      for (int i = 0; i < 16; ++i) ASSERT_EQ(out[nb + i], 0x5A) << "write past the destination";
      // The CPU decoder agrees on what is corrupt (a flipped dtype reads there as another type).
      std::vector<uint8_t> back(nb);
      uint64_t n = 0;
      const Status cs = cpu::decompress(c.data(), c.size(), back.data(), nb, &n);
      EXPECT_EQ(res.status != 0, cs != Status::kOk) << "round " << r;
      if (res.status != 0) ++detected;
      else EXPECT_EQ(std::memcmp(out.data(), v.data(), nb), 0) << "undetected corruption, round " << r;
    }
    EXPECT_GT(detected, rounds * 3 / 4);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  Env env;
  g_env = &env;
  return RUN_ALL_TESTS();
}
