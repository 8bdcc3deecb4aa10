// The GPU codec benchmark: element type x data x size, printing the compression ratio, the
// exponent-entropy bound, and compress / decompress time (median, CUDA events around each call)
// and speed in GB/s of original data (10^9 bytes/s). Every timed round trip is checked bit-exact.
//
//   codec [--types=bf16,fp16,fp32,fp64,e4m3,e5m2] [--data=uniform,normal,real,constant]
//         [--min=256K] [--max=1G] [--log2-block=N] [--prob-bits=N] [--max-ctas=N] [--encoder=N]
//         [--table=auto|block|shared] [--mode=ans,fast] [--json=FILE] [--commit=SHA]
//
// --encoder forces one of the encoder's instantiations (1 wide, 2 middle, 3 narrow, 4 streamed; 0, the
// default: the launcher's choice), to time each against the others in one run.
// --mode lists the exponent coders to time (ans: rANS, the default; fast: the fixed-length code of
// docs/FORMAT.md "Fast streams"); with both, each size runs both on the same buffers, side by side.
// --table forces one table form (auto: the launcher's, shared where blocks have at most 4096 symbols).
// Data are generated on the GPU: uniform U[-1,1] and normal N(0,1) drawn in fp32 (a counter-based
// hash, so any prefix of a large buffer is the smaller buffer), then cast with CUDA's conversions;
// real: the trained fp32 weights of MPIZIP_REAL_WEIGHTS (default .data/real_fp32.bin), cast and
// repeated; constant: one repeated byte, as OSU fills its buffers (labelled: it flatters any codec).
// Buffers up to 256 MB rotate among several copies so that repeated calls do not run from L2.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/codec_cpu.h"
#include "kernels/codec_gpu.h"
#include "osu-bench/common/bench_util.h"

namespace {

using mpizip::Status;
using mpizip::format::DType;
namespace gpu = mpizip::kernels::gpu;
using osub::bench::parse_size;
using osub::bench::split_list;

struct TypeName {
  DType t;
  const char* name;
};
constexpr TypeName kTypes[] = {{DType::kBf16, "bf16"}, {DType::kFp16, "fp16"}, {DType::kFp32, "fp32"},
                               {DType::kFp64, "fp64"}, {DType::kE4m3, "e4m3"}, {DType::kE5m2, "e5m2"}};
enum class Data { kUniform, kNormal, kReal, kConstant };
constexpr const char* kDataNames[] = {"uniform", "normal", "real", "constant"};

__device__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__device__ float value(Data d, uint64_t i, const float* real, uint64_t nreal) {
  const float u1 = (hash32(2 * i) >> 8) * (1.0f / 16777216.0f);
  if (d == Data::kUniform) return 2.0f * u1 - 1.0f;
  if (d == Data::kReal) return real[i % nreal];
  const float u2 = (hash32(2 * i + 1) >> 8) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(1.0f - u1)) * cospif(2.0f * u2);
}

__global__ void generate(DType t, Data d, uint8_t* out, uint64_t count, const float* real, uint64_t nreal) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    const float f = value(d, i, real, nreal);
    switch (t) {
      case DType::kBf16: reinterpret_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(f); break;
      case DType::kFp16: reinterpret_cast<__half*>(out)[i] = __float2half_rn(f); break;
      case DType::kFp32: reinterpret_cast<float*>(out)[i] = f; break;
      case DType::kFp64: reinterpret_cast<double*>(out)[i] = f; break;
      case DType::kE4m3: out[i] = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3); break;
      case DType::kE5m2: out[i] = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2); break;
    }
  }
}

__global__ void count_diff(const uint4* a, const uint4* b, uint64_t n16, unsigned long long* diff) {
  uint32_t local = 0;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n16; i += uint64_t{gridDim.x} * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    local += (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
  }
  if (local) atomicAdd(diff, local);
}

struct Options {
  std::vector<std::string> types{"bf16", "fp16", "fp32", "fp64", "e4m3", "e5m2"};
  std::vector<std::string> data{"uniform", "normal", "real", "constant"};
  uint64_t min = 256 * 1024, max = uint64_t{1} << 30;
  int log2_block = 0, prob_bits = 0, max_ctas = 0, encoder = 0, table = 0;
  std::vector<std::string> modes{"ans"};
  std::string json, commit = "unknown";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto val = [&](const char* key) -> const char* {
      const size_t n = std::strlen(key);
      return a.compare(0, n, key) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = val("--types=")) o.types = split_list(v);
    else if (const char* v = val("--data=")) o.data = split_list(v);
    else if (const char* v = val("--min=")) o.min = parse_size(v);
    else if (const char* v = val("--max=")) o.max = parse_size(v);
    else if (const char* v = val("--log2-block=")) o.log2_block = std::atoi(v);
    else if (const char* v = val("--prob-bits=")) o.prob_bits = std::atoi(v);
    else if (const char* v = val("--max-ctas=")) o.max_ctas = std::atoi(v);
    else if (const char* v = val("--encoder=")) o.encoder = std::atoi(v);
    else if (const char* v = val("--table=")) {
      const std::string t = v;
      o.table = t == "block" ? 1 : t == "shared" ? 2 : 0;
    }
    else if (const char* v = val("--mode=")) o.modes = split_list(v);
    else if (const char* v = val("--json=")) o.json = v;
    else if (const char* v = val("--commit=")) o.commit = v;
    else {
      std::fprintf(stderr, "usage: %s [--types=..] [--data=..] [--min=256K] [--max=1G] [--log2-block=N] [--prob-bits=N] "
                           "[--max-ctas=N] [--encoder=0-4] [--table=auto|block|shared] [--mode=ans,fast] [--json=FILE] [--commit=SHA]\n",
                           argv[0]);
      std::exit(2);
    }
  }
  return o;
}

std::vector<float> load_real() {
  const char* env = std::getenv("MPIZIP_REAL_WEIGHTS");
  const std::string path = env ? env : ".data/real_fp32.bin";
  std::ifstream f(path, std::ios::binary);
  std::vector<float> v;
  if (!f) return v;
  f.seekg(0, std::ios::end);
  v.resize(static_cast<size_t>(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

struct Row {
  std::string type, data, mode;
  uint64_t bytes;
  double ratio, bound, cus, dus;
};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class Bench {
 public:
  Bench(const Options& o, const std::vector<float>& real) : o_(o) {
    CHECK_CUDA(cudaStreamCreate(&stream_));
    CHECK_CUDA(cudaEventCreate(&e0_));
    CHECK_CUDA(cudaEventCreate(&e1_));
    ws_bytes_ = gpu::workspace_bytes(DType::kE5m2, 2 * o.max);
    CHECK_CUDA(cudaMalloc(&ws_, ws_bytes_));
    CHECK_OK(gpu::workspace_init(ws_, ws_bytes_, stream_));
    CHECK_CUDA(cudaMalloc(&res_, sizeof(gpu::DeviceResult)));
    CHECK_CUDA(cudaMalloc(&diff_, sizeof(unsigned long long)));
    if (!real.empty()) {
      CHECK_CUDA(cudaMalloc(&real_, real.size() * 4));
      CHECK_CUDA(cudaMemcpy(real_, real.data(), real.size() * 4, cudaMemcpyHostToDevice));
      nreal_ = real.size();
    }
  }

  // All sizes of one type and data kind.
  void run(DType t, const char* tname, Data d, std::vector<Row>* rows) {
    const uint64_t eb = mpizip::format::elem_bytes(t);
    const uint64_t pool = std::max<uint64_t>(o_.max, uint64_t{256} << 20);
    uint8_t *in = nullptr, *comp = nullptr, *out = nullptr;
    CHECK_CUDA(cudaMalloc(&in, pool));
    const uint64_t count_all = pool / eb;
    if (d == Data::kConstant) CHECK_CUDA(cudaMemset(in, 'a', pool));
    else generate<<<1024, 256, 0, stream_>>>(t, d, in, count_all, real_, nreal_);
    CHECK_CUDA(cudaStreamSynchronize(stream_));
    const double bound = entropy_bound(t, in, std::min<uint64_t>(count_all, (uint64_t{64} << 20) / eb));
    const uint64_t comp_pool = gpu::max_compressed_size(t, pool / eb) + 4096;
    CHECK_CUDA(cudaMalloc(&comp, comp_pool));
    CHECK_CUDA(cudaMalloc(&out, pool));
    for (uint64_t bytes = o_.min; bytes <= o_.max; bytes *= 4) {
      const uint64_t count = bytes / eb;
      const uint64_t cap = (gpu::max_compressed_size(t, count) + 255) / 256 * 256;
      const int copies = static_cast<int>(std::clamp<uint64_t>((uint64_t{256} << 20) / bytes, 1, 16));
      const int reps = bytes <= (uint64_t{16} << 20) ? 50 : bytes <= (uint64_t{256} << 20) ? 20 : 10;
      for (const std::string& mode : o_.modes) {
      const bool fast = mode == "fast";
      gpu::EncodeOptions opt;
      opt.mode = fast ? gpu::kModeFast : gpu::kModeAns;
      opt.log2_block = o_.log2_block;
      opt.prob_bits = o_.prob_bits;
      opt.max_ctas = o_.max_ctas;
      opt.encoder = o_.encoder;
      opt.table = o_.table;
      std::vector<float> ct, dt;
      uint64_t size = 0, size0 = 0;
      bool ok = true;
      // Three warm-up calls, then reps timed ones, rotating over the copies. size0: the result of
      // copy 0, the input's first `bytes` (what the anchor's benchmark codes: for real data the
      // copies hold different weights).
      const auto timed = [&](std::vector<float>* ms_out, auto&& call) {
        for (int r = -3; r < reps; ++r) {
          CHECK_CUDA(cudaEventRecord(e0_, stream_));
          const int c = (r + 3) % copies;
          call(c);
          CHECK_CUDA(cudaEventRecord(e1_, stream_));
          CHECK_CUDA(cudaEventSynchronize(e1_));
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, e0_, e1_));
          if (r >= 0) ms_out->push_back(ms);
          gpu::DeviceResult res;
          CHECK_CUDA(cudaMemcpy(&res, res_, sizeof res, cudaMemcpyDeviceToHost));
          if (res.status) ok = false;
          size = res.size;
          if (c == 0) size0 = res.size;
        }
      };
      timed(&ct, [&](int c) {
        CHECK_OK(gpu::compress(t, in + c * bytes, count, comp + c * cap, cap, ws_, ws_bytes_, res_, opt, stream_));
      });
      const uint64_t stream_bytes = size0;
      // Every copy holds its stream now; decode them in rotation.
      timed(&dt, [&](int c) {
        gpu::DecodeOptions dopt;
        dopt.mode = opt.mode;
        dopt.max_ctas = o_.max_ctas;
        CHECK_OK(gpu::decompress(t, comp + c * cap, cap, out + c * bytes, bytes, ws_, ws_bytes_, res_, dopt, stream_));
      });
      ok = ok && size == count;
      size = stream_bytes;
      for (int c = 0; c < copies && c < reps + 3; ++c) ok = ok && same(in + c * bytes, out + c * bytes, count * eb);
      Row row{tname, kDataNames[static_cast<int>(d)], mode, bytes, double(size) / double(count * eb), bound,
              1000.0 * median(ct), 1000.0 * median(dt)};
      std::printf("%-5s %-8s %-4s %10llu  ratio %.4f  bound %.4f  compress %9.1f us %8.1f GB/s  decompress %9.1f us "
                  "%8.1f GB/s  %s\n",
                  tname, row.data.c_str(), mode.c_str(), static_cast<unsigned long long>(bytes), row.ratio, bound, row.cus,
                  bytes / row.cus / 1000.0, row.dus, bytes / row.dus / 1000.0, ok ? "ok" : "MISMATCH");
      std::fflush(stdout);
      if (!ok) failed_ = true;
      rows->push_back(row);
      }
    }
    cudaFree(in);
    cudaFree(comp);
    cudaFree(out);
  }

  bool failed() const { return failed_; }

 private:
  bool same(const uint8_t* a, const uint8_t* b, uint64_t n) {
    CHECK_CUDA(cudaMemsetAsync(diff_, 0, sizeof(unsigned long long), stream_));
    count_diff<<<1024, 256, 0, stream_>>>(reinterpret_cast<const uint4*>(a), reinterpret_cast<const uint4*>(b), n / 16,
                                         diff_);
    unsigned long long d = 0;
    CHECK_CUDA(cudaMemcpy(&d, diff_, sizeof d, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> ta(n % 16), tb(n % 16);
    CHECK_CUDA(cudaMemcpy(ta.data(), a + n / 16 * 16, n % 16, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(tb.data(), b + n / 16 * 16, n % 16, cudaMemcpyDeviceToHost));
    return d == 0 && ta == tb;
  }

  // The entropy bound of the CPU reference on a prefix (64 MB at most) of the data.
  static double entropy_bound(DType t, const uint8_t* dev, uint64_t count) {
    std::vector<uint8_t> h(count * mpizip::format::elem_bytes(t));
    CHECK_CUDA(cudaMemcpy(h.data(), dev, h.size(), cudaMemcpyDeviceToHost));
    return mpizip::kernels::cpu::entropy_bound(t, h.data(), count);
  }

  const Options& o_;
  cudaStream_t stream_;
  cudaEvent_t e0_, e1_;
  void* ws_ = nullptr;
  uint64_t ws_bytes_ = 0;
  gpu::DeviceResult* res_ = nullptr;
  unsigned long long* diff_ = nullptr;
  float* real_ = nullptr;
  uint64_t nreal_ = 0;
  bool failed_ = false;
};

void write_json(const Options& o, const std::vector<Row>& rows) {
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  FILE* f = std::fopen(o.json.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "{\"gpu\": \"%s\", \"commit\": \"%s\", \"date\": \"%s\", \"rows\": [\n", prop.name,
               o.commit.c_str(), date);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f,
                 "  {\"type\": \"%s\", \"data\": \"%s\", \"mode\": \"%s\", \"bytes\": %llu, \"ratio\": %.5f, \"bound\": %.5f, "
                 "\"compress_us\": %.2f, \"decompress_us\": %.2f}%s\n",
                 r.type.c_str(), r.data.c_str(), r.mode.c_str(), static_cast<unsigned long long>(r.bytes), r.ratio, r.bound, r.cus,
                 r.dus, i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  const std::vector<float> real = load_real();
  Bench bench(o, real);
  std::vector<Row> rows;
  for (const auto& tn : o.types) {
    const TypeName* t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const TypeName& x) { return tn == x.name; });
    if (t == std::end(kTypes)) {
      std::fprintf(stderr, "unknown type %s\n", tn.c_str());
      return 2;
    }
    for (const auto& dn : o.data) {
      const int d = static_cast<int>(std::find(std::begin(kDataNames), std::end(kDataNames), dn) - std::begin(kDataNames));
      if (d == 4) {
        std::fprintf(stderr, "unknown data %s\n", dn.c_str());
        return 2;
      }
      if (d == static_cast<int>(Data::kReal) && real.empty()) {
        std::printf("%-5s real: no weights file (MPIZIP_REAL_WEIGHTS): skipped\n", t->name);
        continue;
      }
      bench.run(t->t, t->name, static_cast<Data>(d), &rows);
    }
  }
  if (!o.json.empty()) write_json(o, rows);
  return bench.failed() ? 1 : 0;
}
