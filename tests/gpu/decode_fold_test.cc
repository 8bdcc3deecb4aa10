// Decoding fused with the reduce (kernels/codec_gpu.h, decode_fold) against decompressing every
// stream on the CPU and folding with the CPU reduce: bit for bit on every type and op, 2 to 4
// inputs with the raw one at every rank position, streams from the GPU and from the CPU codec
// (every block size, the slow-table precisions, checksums, STORED streams), streams of one fold
// with different block sizes, in place, counts from 1 element to 48 MiB; and every kind of bad
// stream reported in its result, never a fault (run under compute-sanitizer by
// tests/gpu/run.sh). Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/codec_cpu.h"
#include "kernels/codec_gpu.h"
#include "kernels/reduce_cpu.h"
#include "tests/gpu/reduce_inputs.h"

namespace mpizip::kernels {
namespace {

using format::DType;
using reduce::Op;
using test::mix;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Input r: values near 1 in magnitude (compressible: few exponents), one in 64 a random bit
// pattern (NaNs, infinities, zeros, subnormals of every type).
std::vector<uint8_t> input(DType t, int r, uint64_t count) {
  const size_t eb = format::elem_bytes(t);
  std::vector<uint8_t> v(count * eb);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t h = mix((uint64_t(r) << 40) + i + 1);
    uint64_t bits = h;
    if (h % 64 != 0) {
      const float f = (h % 2 ? -1.0f : 1.0f) * (0.25f + static_cast<float>(h >> 40) / 8388608.0f);
      const double d = f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      switch (t) {
        case DType::kBf16: bits = reduce::f32_to_bf16(f); break;
        case DType::kFp16: bits = reduce::f32_to_fp16(f); break;
        case DType::kFp32: bits = u; break;
        case DType::kE4m3: bits = reduce::f32_to_fp8<4, 3>(f); break;
        case DType::kE5m2: bits = reduce::f32_to_fp8<5, 2>(f); break;
        default: std::memcpy(&bits, &d, 8); break;
      }
    }
    std::memcpy(v.data() + i * eb, &bits, eb);
  }
  return v;
}

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t n) { EXPECT_EQ(cudaMalloc(&p, n ? n : 1), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  uint8_t* get() const { return static_cast<uint8_t*>(p); }
};

struct Env {
  Dev ws{gpu::workspace_bytes(DType::kFp64, uint64_t{1} << 26)};
  Dev res{sizeof(gpu::DeviceResult) * 64};
  Env() { EXPECT_EQ(gpu::workspace_init(ws.get(), gpu::workspace_bytes(DType::kFp64, uint64_t{1} << 26), nullptr), Status::kOk); }
  uint64_t ws_bytes() const { return gpu::workspace_bytes(DType::kFp64, uint64_t{1} << 26); }
  gpu::DeviceResult* results() const { return reinterpret_cast<gpu::DeviceResult*>(res.get()); }
};
Env& env() {
  static Env e;
  return e;
}

// How a stream of a case is made.
struct Maker {
  bool gpu = true;
  int log2_block = 0;  // 0: the encoder's choice
  int prob_bits = 0;
  bool checksum = false;
};

std::vector<uint8_t> make_stream(DType t, const std::vector<uint8_t>& data, uint64_t count, const Maker& m) {
  std::vector<uint8_t> s(cpu::max_compressed_size(t, count));
  uint64_t n = 0;
  if (m.gpu) {
    Dev src(data.size()), dst(s.size());
    EXPECT_EQ(cudaMemcpy(src.get(), data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
    gpu::EncodeOptions opt;
    opt.log2_block = m.log2_block;
    opt.prob_bits = m.prob_bits;
    opt.checksum = m.checksum;
    EXPECT_EQ(gpu::compress(t, src.get(), count, dst.get(), s.size(), env().ws.get(), env().ws_bytes(),
                            env().results(), opt, nullptr),
              Status::kOk);
    gpu::DeviceResult r{};
    EXPECT_EQ(cudaMemcpy(&r, env().results(), sizeof r, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(r.status, 0);
    n = r.size;
    EXPECT_EQ(cudaMemcpy(s.data(), dst.get(), n, cudaMemcpyDeviceToHost), cudaSuccess);
  } else {
    cpu::EncodeOptions opt;
    opt.log2_block = m.log2_block;
    opt.prob_bits = m.prob_bits;
    opt.checksum = m.checksum;
    EXPECT_EQ(cpu::compress(t, data.data(), count, s.data(), s.size(), &n, opt), Status::kOk);
  }
  s.resize(n);
  return s;
}

// One input of a case: raw elements, or a stream (possibly damaged by `damage`).
struct In {
  std::vector<uint8_t> data;    // the elements (raw inputs) or the stream
  bool stream = false;
};

// Runs decode_fold on the inputs (streams and raw data copied to the device) and returns the
// output and the streams' results.
void run_fold(DType t, Op op, const std::vector<In>& in, uint64_t count, int in_place_of,
              std::vector<uint8_t>* out, std::vector<gpu::DeviceResult>* res, Status* launched) {
  const size_t bytes = count * format::elem_bytes(t);
  std::vector<std::unique_ptr<Dev>> dev;
  std::vector<gpu::FoldInput> fin;
  int streams = 0;
  for (const In& x : in) {
    dev.push_back(std::make_unique<Dev>(x.data.size()));
    CUDA_OK(cudaMemcpy(dev.back()->get(), x.data.data(), x.data.size(), cudaMemcpyHostToDevice));
    fin.push_back({dev.back()->get(), x.stream ? x.data.size() : 0});
    streams += x.stream;
  }
  Dev o(bytes);
  uint8_t* dst = in_place_of >= 0 ? dev[in_place_of]->get() : o.get();
  CUDA_OK(cudaMemset(env().results(), 0xEE, sizeof(gpu::DeviceResult) * 64));
  *launched = gpu::decode_fold(t, op, fin.data(), static_cast<int>(fin.size()), dst, count, env().ws.get(),
                               env().ws_bytes(), env().results(), nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  out->resize(bytes);
  CUDA_OK(cudaMemcpy(out->data(), dst, bytes, cudaMemcpyDeviceToHost));
  res->resize(streams);
  if (streams) {
    CUDA_OK(cudaMemcpy(res->data(), env().results(), sizeof(gpu::DeviceResult) * streams, cudaMemcpyDeviceToHost));
  }
}

// The reference: every stream decoded by the CPU, then the CPU reduce in input order.
std::vector<uint8_t> reference(DType t, Op op, const std::vector<In>& in, uint64_t count) {
  const size_t bytes = count * format::elem_bytes(t);
  std::vector<std::vector<uint8_t>> dec;
  std::vector<const void*> ptr;
  dec.reserve(in.size());
  for (const In& x : in) {
    if (!x.stream) {
      ptr.push_back(x.data.data());
      continue;
    }
    dec.emplace_back(bytes);
    uint64_t n = 0;
    EXPECT_EQ(cpu::decompress(x.data.data(), x.data.size(), dec.back().data(), bytes, &n), Status::kOk);
    EXPECT_EQ(n, count);
    ptr.push_back(dec.back().data());
  }
  std::vector<uint8_t> want(bytes);
  EXPECT_EQ(cpu::reduce(reduce::type_of(t), op, ptr.data(), static_cast<int>(ptr.size()), want.data(), count), Status::kOk);
  return want;
}

// A fold of n inputs where `raw` is the raw one and the others are streams made by makers[k].
void check(DType t, Op op, int n, int raw, uint64_t count, const std::vector<Maker>& makers, bool in_place = false) {
  SCOPED_TRACE(testing::Message() << "dtype " << int(t) << " op " << int(op) << " inputs " << n << " raw " << raw
                                  << " count " << count << (in_place ? " in place" : ""));
  std::vector<In> in;
  int k = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<uint8_t> d = input(t, r, count);
    if (r == raw) {
      in.push_back({std::move(d), false});
    } else {
      in.push_back({make_stream(t, d, count, makers[k++ % makers.size()]), true});
    }
  }
  std::vector<uint8_t> got;
  std::vector<gpu::DeviceResult> res;
  Status s = Status::kOk;
  run_fold(t, op, in, count, in_place ? raw : -1, &got, &res, &s);
  ASSERT_EQ(s, Status::kOk);
  for (size_t i = 0; i < res.size(); ++i) {
    EXPECT_EQ(res[i].status, 0) << "stream " << i;
    EXPECT_EQ(res[i].size, count) << "stream " << i;
  }
  EXPECT_TRUE(got == reference(t, op, in, count));
}

// The types the fused kernel decodes (gpu::fold_decodes): E4M3 is decoded, then reduced.
constexpr DType kTypes[] = {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp64, DType::kE5m2};
constexpr Op kOps[] = {Op::kSum, Op::kProd, Op::kMin, Op::kMax};

TEST(DecodeFold, MatchesDecodeThenReduce) {
  const std::vector<Maker> gpu_made = {Maker{}};
  for (DType t : kTypes) {
    for (Op op : kOps) {
      for (int n = 2; n <= 4; ++n) {
        for (int raw = 0; raw < n; ++raw) check(t, op, n, raw, 100003, gpu_made);
      }
    }
  }
}

TEST(DecodeFold, Sizes) {
  const std::vector<Maker> gpu_made = {Maker{}};
  for (DType t : kTypes) {
    for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{64}, uint64_t{1023}, uint64_t{1025}, uint64_t{16384},
                           uint64_t{16385}, uint64_t{(3u << 20) + 5}}) {
      check(t, Op::kSum, 4, 1, count, gpu_made);
    }
  }
  check(DType::kBf16, Op::kSum, 4, 3, uint64_t{24} << 20, gpu_made);  // 48 MiB, 16384-symbol blocks
}

TEST(DecodeFold, CpuStreamsEveryBlockSizeAndPrecision) {
  for (DType t : kTypes) {
    for (int lb : {10, 13, 16}) {
      for (int pb : {9, 11, 12, 15}) {
        check(t, Op::kSum, 3, 0, 70001, {Maker{false, lb, pb, false}});
      }
    }
  }
}

TEST(DecodeFold, MixedBlockSizesInOneFold) {
  for (DType t : kTypes) {
    // Streams with 1024-, 16384- and 65536-symbol blocks (the last from the CPU codec).
    check(t, Op::kSum, 4, 2, 300007, {Maker{true, 10, 0, false}, Maker{true, 14, 0, false}, Maker{false, 16, 12, false}});
    check(t, Op::kMax, 4, 0, 65536 * 3, {Maker{false, 16, 0, false}, Maker{true, 10, 0, true}, Maker{false, 11, 0, false}});
  }
}

TEST(DecodeFold, ChecksumsStoredAndInPlace) {
  for (DType t : kTypes) {
    check(t, Op::kSum, 4, 1, 200003, {Maker{true, 0, 0, true}, Maker{false, 0, 0, true}}, true);
    check(t, Op::kMin, 3, 2, 5, {Maker{}, Maker{false, 0, 0, false}});  // tiny: STORED streams
  }
}

TEST(DecodeFold, AllRawIsTheReduce) {
  for (DType t : kTypes) {
    std::vector<In> in;
    for (int r = 0; r < 5; ++r) in.push_back({input(t, r, 4099), false});
    std::vector<uint8_t> got;
    std::vector<gpu::DeviceResult> res;
    Status s;
    run_fold(t, Op::kProd, in, 4099, -1, &got, &res, &s);
    ASSERT_EQ(s, Status::kOk);
    EXPECT_TRUE(got == reference(t, Op::kProd, in, 4099));
  }
}

// A fold with one damaged stream: its result reports the damage, the other's is clean, nothing
// faults. want_status -1: a damage that may leave the data intact (a padding byte), so either the
// result reports it or the output is the undamaged fold's.
void expect_reported(DType t, const std::vector<uint8_t>& bad, uint64_t count, int32_t want_status,
                     const std::vector<uint8_t>* good = nullptr) {
  std::vector<In> in;
  in.push_back({input(t, 0, count), false});
  in.push_back({bad, true});
  in.push_back({make_stream(t, input(t, 2, count), count, Maker{}), true});
  std::vector<uint8_t> got;
  std::vector<gpu::DeviceResult> res;
  Status s;
  run_fold(t, Op::kSum, in, count, -1, &got, &res, &s);
  ASSERT_EQ(s, Status::kOk);
  ASSERT_EQ(res.size(), 2u);
  if (want_status < 0 && res[0].status == 0) {
    in[1].data = *good;
    EXPECT_TRUE(got == reference(t, Op::kSum, in, count)) << "damage neither reported nor harmless";
    return;
  }
  if (want_status >= 0) {
    EXPECT_EQ(res[0].status, want_status);
  } else {
    EXPECT_NE(res[0].status, 0);
  }
  EXPECT_EQ(res[0].size, 0u);
  EXPECT_EQ(res[1].status, 0);
  EXPECT_EQ(res[1].size, count);
}

TEST(DecodeFold, BadStreamsAreReported) {
  const uint64_t count = 50000;
  for (DType t : kTypes) {
    SCOPED_TRACE(int(t));
    const std::vector<uint8_t> good = make_stream(t, input(t, 1, count), count, Maker{true, 0, 0, true});
    std::vector<uint8_t> s = good;
    s[0] ^= 1;  // magic
    expect_reported(t, s, count, static_cast<int32_t>(Status::kCorruptStream));
    s = good;
    s.resize(s.size() - 16);  // truncated
    expect_reported(t, s, count, static_cast<int32_t>(Status::kCorruptStream));
    // Another element count: more (kTruncated) and fewer (kCorruptStream) elements.
    expect_reported(t, make_stream(t, input(t, 1, count + 1), count + 1, Maker{}), count,
                    static_cast<int32_t>(Status::kTruncated));
    expect_reported(t, make_stream(t, input(t, 1, count - 1), count - 1, Maker{}), count,
                    static_cast<int32_t>(Status::kCorruptStream));
    // Another element type.
    const DType other = t == DType::kFp32 ? DType::kFp64 : DType::kFp32;
    const uint64_t other_count = count * format::elem_bytes(t) / format::elem_bytes(other);
    expect_reported(t, make_stream(other, input(other, 1, other_count), other_count, Maker{}), count,
                    static_cast<int32_t>(Status::kTypeMismatch));
    // A raw byte (checksum catches it) and random bytes anywhere past the header.
    s = good;
    s[format::kHeaderBytes + 5] ^= 0x10;
    expect_reported(t, s, count, static_cast<int32_t>(Status::kCorruptStream));
    std::mt19937_64 rng(static_cast<uint64_t>(t));
    for (int i = 0; i < 40; ++i) {
      s = good;
      const size_t at = format::kHeaderBytes + rng() % (s.size() - format::kHeaderBytes);
      s[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      expect_reported(t, s, count, -1, &good);
    }
  }
}

TEST(DecodeFold, RejectsBadArguments) {
  Dev a(4096), b(4096);
  gpu::FoldInput in[5] = {{a.get(), 0}, {b.get(), 100}, {b.get(), 100}, {b.get(), 100}, {b.get(), 100}};
  const auto fold = [&](DType t, Op op, int n, void* out) {
    return gpu::decode_fold(t, op, in, n, out, 16, env().ws.get(), env().ws_bytes(), env().results(), nullptr);
  };
  EXPECT_FALSE(gpu::fold_fusable(in, 5, a.get()));  // four streams
  EXPECT_EQ(fold(DType::kFp32, Op::kSum, 5, a.get()), Status::kInvalidArgument);
  EXPECT_TRUE(gpu::fold_fusable(in, 4, a.get()));
  EXPECT_FALSE(gpu::fold_fusable(in, 4, a.get() + 4));  // unaligned output
  EXPECT_EQ(fold(DType::kFp32, Op::kSum, 4, a.get() + 4), Status::kInvalidArgument);
  EXPECT_EQ(fold(static_cast<DType>(7), Op::kSum, 2, a.get()), Status::kInvalidArgument);  // no such type
  EXPECT_FALSE(gpu::fold_decodes(DType::kE4m3));
  EXPECT_EQ(fold(DType::kE4m3, Op::kSum, 2, a.get()), Status::kUnsupported);
  EXPECT_EQ(fold(DType::kFp32, static_cast<Op>(9), 2, a.get()), Status::kInvalidArgument);
  EXPECT_EQ(fold(DType::kFp32, Op::kSum, 0, a.get()), Status::kInvalidArgument);
}

}  // namespace
}  // namespace mpizip::kernels

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
