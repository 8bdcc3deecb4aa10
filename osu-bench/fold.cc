// The owner's step of the two-shot allreduce on the GPU, alone: P - 1 compressed pieces and the
// owner's raw piece folded in rank order, two ways measured in one run on the same streams:
//   separate: decompress_batch of the P - 1 streams into temporaries, then reduce over the P inputs;
//   fused:    decode_fold, one launch that decodes inside the fold (kernels/codec_gpu.h).
// Both outputs are compared bit for bit. Medians of CUDA-event times around each step.
//
//   fold [--types=bf16,float] [--data=uniform,real] [--ranks=2,4] [--min=1M] [--max=64M]
//        [--json=FILE] [--commit=SHA]
//
// Sizes are the owner's piece in bytes. Data: osu-bench/common/data.h (rank r's piece is rank r's
// data); real needs the weights file (osu-bench/data/fetch-real-weights.sh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "kernels/codec_gpu.h"
#include "kernels/reduce_gpu.h"
#include "osu-bench/common/bench_util.h"
#include "osu-bench/common/data.h"
#include "osu-bench/common/elem_type.h"

namespace {

using mpizip::Status;
using mpizip::format::DType;
namespace gpu = mpizip::kernels::gpu;
using osub::bench::parse_size;
using osub::bench::split_list;

struct Type {
  const char* name;
  osub::ElemType elem;
  DType dtype;
};
constexpr Type kTypes[] = {{"bf16", osub::ElemType::kBf16, DType::kBf16},
                           {"fp16", osub::ElemType::kFp16, DType::kFp16},
                           {"float", osub::ElemType::kFloat, DType::kFp32},
                           {"double", osub::ElemType::kDouble, DType::kFp64}};

struct Row {
  std::string type, data;
  int ranks;
  uint64_t bytes;
  double separate_us, fused_us;
  bool same;
};

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return 1000.0 * v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> types{"bf16", "float"}, data{"uniform", "real"}, ranks{"2", "4"};
  uint64_t min = 1 << 20, max = 64 << 20;
  std::string json, commit = "unknown";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto val = [&](const char* key) -> const char* {
      return a.rfind(key, 0) == 0 ? a.c_str() + std::strlen(key) : nullptr;
    };
    if (const char* v = val("--types=")) types = split_list(v);
    else if (const char* v = val("--data=")) data = split_list(v);
    else if (const char* v = val("--ranks=")) ranks = split_list(v);
    else if (const char* v = val("--min=")) min = parse_size(v);
    else if (const char* v = val("--max=")) max = parse_size(v);
    else if (const char* v = val("--json=")) json = v;
    else if (const char* v = val("--commit=")) commit = v;
    else {
      std::fprintf(stderr, "usage: %s [--types=..] [--data=..] [--ranks=2,4] [--min=1M] [--max=64M] [--json=F]\n",
                   argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  std::string err;
  const auto real = osub::RealWeights::load(osub::RealWeights::default_path(), err);
  cudaStream_t stream;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  std::vector<Row> rows;
  bool all_same = true;
  for (const std::string& tn : types) {
    const Type* t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const Type& x) { return tn == x.name; });
    if (t == std::end(kTypes)) {
      std::fprintf(stderr, "unknown type %s\n", tn.c_str());
      return 2;
    }
    const uint64_t eb = mpizip::format::elem_bytes(t->dtype);
    for (const std::string& dn : data) {
      const auto kind = osub::data_kind_from_name(dn);
      if (!kind) {
        std::fprintf(stderr, "unknown data %s\n", dn.c_str());
        return 2;
      }
      if (*kind == osub::DataKind::kReal && !real) {
        std::printf("%s real: %s: skipped\n", t->name, err.c_str());
        continue;
      }
      for (const std::string& rs : ranks) {
        const int P = std::atoi(rs.c_str());
        if (P < 2 || P > 1 + gpu::kMaxFoldStreams) {
          std::fprintf(stderr, "--ranks: 2..%d\n", 1 + gpu::kMaxFoldStreams);
          return 2;
        }
        for (uint64_t bytes = min; bytes <= max; bytes *= 4) {
          const uint64_t count = bytes / eb;
          const uint64_t cap = (gpu::max_compressed_size(t->dtype, count) + 255) / 256 * 256;
          const uint64_t ws_bytes = gpu::workspace_bytes(t->dtype, count * P);
          void* ws = nullptr;
          gpu::DeviceResult* res = nullptr;
          CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
          CHECK_CUDA(cudaMalloc(&res, sizeof(gpu::DeviceResult) * 64));
          CHECK_OK(gpu::workspace_init(ws, ws_bytes, stream));
          // Rank 0 is the owner (raw); ranks 1..P-1 arrive compressed.
          std::vector<uint8_t*> raw(P), streams(P), temps(P);
          std::vector<uint64_t> sizes(P);
          std::vector<std::byte> host(bytes);
          for (int r = 0; r < P; ++r) {
            osub::generate_data(*kind, t->elem, r, count, real ? &*real : nullptr, host.data());
            CHECK_CUDA(cudaMalloc(&raw[r], bytes));
            CHECK_CUDA(cudaMemcpy(raw[r], host.data(), bytes, cudaMemcpyHostToDevice));
            if (r == 0) continue;
            CHECK_CUDA(cudaMalloc(&streams[r], cap));
            CHECK_CUDA(cudaMalloc(&temps[r], bytes));
            CHECK_OK(gpu::compress(t->dtype, raw[r], count, streams[r], cap, ws, ws_bytes, res, {}, stream));
            gpu::DeviceResult h;
            CHECK_CUDA(cudaMemcpy(&h, res, sizeof h, cudaMemcpyDeviceToHost));
            sizes[r] = h.size;
          }
          uint8_t *out_sep = nullptr, *out_fused = nullptr;
          CHECK_CUDA(cudaMalloc(&out_sep, bytes));
          CHECK_CUDA(cudaMalloc(&out_fused, bytes));
          std::vector<gpu::Buffer> jobs;
          std::vector<const void*> in(P);
          std::vector<gpu::FoldInput> fin(P);
          in[0] = raw[0];
          fin[0] = {raw[0], 0};
          for (int r = 1; r < P; ++r) {
            jobs.push_back({streams[r], sizes[r], temps[r], bytes});
            in[r] = temps[r];
            fin[r] = {streams[r], sizes[r]};
          }
          const int reps = bytes <= (uint64_t{16} << 20) ? 50 : 20;
          std::vector<float> ts, tf;
          bool ok = true;
          for (int i = -3; i < reps; ++i) {
            float ms = 0;
            CHECK_CUDA(cudaEventRecord(e0, stream));
            CHECK_OK(gpu::decompress_batch(t->dtype, jobs.data(), P - 1, ws, ws_bytes, res, 0, stream));
            CHECK_OK(gpu::reduce(mpizip::kernels::reduce::type_of(t->dtype), mpizip::kernels::reduce::Op::kSum, in.data(), P, out_sep, count, 0, stream));
            CHECK_CUDA(cudaEventRecord(e1, stream));
            CHECK_CUDA(cudaEventSynchronize(e1));
            CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 0) ts.push_back(ms);
            CHECK_CUDA(cudaEventRecord(e0, stream));
            CHECK_OK(gpu::decode_fold(t->dtype, mpizip::kernels::reduce::Op::kSum, fin.data(), P, out_fused, count, ws,
                                      ws_bytes, res, stream));
            CHECK_CUDA(cudaEventRecord(e1, stream));
            CHECK_CUDA(cudaEventSynchronize(e1));
            CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 0) tf.push_back(ms);
            std::vector<gpu::DeviceResult> h(P - 1);
            CHECK_CUDA(cudaMemcpy(h.data(), res, sizeof(gpu::DeviceResult) * (P - 1), cudaMemcpyDeviceToHost));
            for (const auto& x : h) ok = ok && x.status == 0 && x.size == count;
          }
          std::vector<uint8_t> a(bytes), b(bytes);
          CHECK_CUDA(cudaMemcpy(a.data(), out_sep, bytes, cudaMemcpyDeviceToHost));
          CHECK_CUDA(cudaMemcpy(b.data(), out_fused, bytes, cudaMemcpyDeviceToHost));
          ok = ok && a == b;
          all_same = all_same && ok;
          Row row{t->name, dn, P, bytes, median(ts), median(tf), ok};
          std::printf("%-6s %-8s P=%d %10llu  separate %9.1f us  fused %9.1f us  speedup %.2fx  %s\n", t->name,
                      dn.c_str(), P, static_cast<unsigned long long>(bytes), row.separate_us, row.fused_us,
                      row.separate_us / row.fused_us, ok ? "same bits" : "MISMATCH");
          std::fflush(stdout);
          rows.push_back(row);
          for (int r = 0; r < P; ++r) {
            cudaFree(raw[r]);
            cudaFree(streams[r]);
            cudaFree(temps[r]);
          }
          cudaFree(out_sep);
          cudaFree(out_fused);
          cudaFree(ws);
          cudaFree(res);
        }
      }
    }
  }
  if (!json.empty()) {
    cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    if (FILE* f = std::fopen(json.c_str(), "w")) {
      std::fprintf(f, "{\"gpu\": \"%s\", \"commit\": \"%s\", \"date\": \"%s\", \"op\": \"sum\", \"rows\": [\n",
                   prop.name, commit.c_str(), date);
      for (size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        std::fprintf(f,
                     "  {\"type\": \"%s\", \"data\": \"%s\", \"ranks\": %d, \"bytes\": %llu, \"separate_us\": %.2f, "
                     "\"fused_us\": %.2f, \"same_bits\": %s}%s\n",
                     r.type.c_str(), r.data.c_str(), r.ranks, static_cast<unsigned long long>(r.bytes), r.separate_us,
                     r.fused_us, r.same ? "true" : "false", i + 1 < rows.size() ? "," : "");
      }
      std::fprintf(f, "]}\n");
      std::fclose(f);
    }
  }
  return all_same ? 0 : 1;
}
