// The CPU codec benchmark: element type x data x size x threads, reporting the compression ratio,
// compress and decompress speed (GB/s of original data, best iteration) and the exponent-entropy
// bound.
//
//   codec_cpu_bench [--json=FILE --machine=TEXT --commit=SHA] [Google Benchmark flags]
//
// With --json, one row per benchmark is also written to FILE in the layout of
// osu-bench/results/codec-cpu.json. "real" rows run when the trained-weights file exists
// (MPIZIP_REAL_WEIGHTS, see osu-bench/common/data.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/codec_cpu.h"
#include "osu-bench/common/data.h"

namespace {

using mpizip::Status;
using mpizip::format::DType;
namespace cpu = mpizip::kernels::cpu;

struct TypeInfo {
  DType dtype;
  osub::ElemType elem;
};
constexpr TypeInfo kTypes[] = {
    {DType::kBf16, osub::ElemType::kBf16},      {DType::kFp16, osub::ElemType::kFp16},
    {DType::kFp32, osub::ElemType::kFloat},     {DType::kFp64, osub::ElemType::kDouble},
    {DType::kE4m3, osub::ElemType::kFp8E4M3},   {DType::kE5m2, osub::ElemType::kFp8E5M2},
};
constexpr osub::DataKind kKinds[] = {osub::DataKind::kUniform, osub::DataKind::kNormal,
                                     osub::DataKind::kConstant, osub::DataKind::kReal};

struct Row {
  std::string type, data;
  uint64_t bytes;
  int threads;
  double ratio, bound, compress_gbps, decompress_gbps;
};
std::map<std::tuple<int, int, uint64_t, int>, Row> g_rows;  // last run of each benchmark
std::optional<osub::RealWeights> g_real;

// The largest buffer of each (type, kind) is generated once; smaller sizes use its prefix, which
// osub::generate_data makes equal to a smaller buffer.
const std::vector<uint8_t>& data_for(const TypeInfo& t, osub::DataKind kind, uint64_t bytes) {
  static std::map<std::pair<int, int>, std::vector<uint8_t>> cache;
  auto& v = cache[{static_cast<int>(t.dtype), static_cast<int>(kind)}];
  if (v.size() < bytes) {
    v.resize(bytes);
    osub::generate_data(kind, t.elem, 0, bytes / osub::elem_type_size(t.elem),
                        g_real ? &*g_real : nullptr, reinterpret_cast<std::byte*>(v.data()));
  }
  return v;
}

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void bm_codec(benchmark::State& state, TypeInfo t, osub::DataKind kind) {
  const uint64_t bytes = static_cast<uint64_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const uint64_t count = bytes / mpizip::format::elem_bytes(t.dtype);
  const std::vector<uint8_t>& src = data_for(t, kind, bytes);
  std::vector<uint8_t> stream(cpu::max_compressed_size(t.dtype, count)), back(bytes);
  cpu::EncodeOptions opt;
  opt.threads = threads;
  uint64_t written = 0, got = 0;
  // Speeds are of the best iteration: the machines this runs on are often shared, and the best
  // iteration is the one least disturbed by other work.
  double tc = 1e30, td = 1e30;
  for (auto _ : state) {
    auto a = std::chrono::steady_clock::now();
    Status s1 = cpu::compress(t.dtype, src.data(), count, stream.data(), stream.size(), &written, opt);
    auto b = std::chrono::steady_clock::now();
    Status s2 = cpu::decompress(stream.data(), written, back.data(), back.size(), &got, threads);
    auto c = std::chrono::steady_clock::now();
    if (s1 != Status::kOk || s2 != Status::kOk) {
      state.SkipWithError("codec failed");
      return;
    }
    tc = std::min(tc, seconds(a, b));
    td = std::min(td, seconds(b, c));
    state.SetIterationTime(seconds(a, c));
  }
  if (std::memcmp(back.data(), src.data(), bytes) != 0) {
    state.SkipWithError("round trip differs");
    return;
  }
  Row r{std::string(osub::elem_type_name(t.elem)), std::string(osub::data_kind_name(kind)), bytes, threads,
        static_cast<double>(written) / static_cast<double>(bytes),
        cpu::entropy_bound(t.dtype, src.data(), count), bytes / tc / 1e9, bytes / td / 1e9};
  state.counters["ratio"] = r.ratio;
  state.counters["bound"] = r.bound;
  state.counters["compress_GBps"] = r.compress_gbps;
  state.counters["decompress_GBps"] = r.decompress_gbps;
  g_rows[{static_cast<int>(t.dtype), static_cast<int>(kind), bytes, threads}] = r;
}

// The sweep behind the defaults: ratio over the entropy bound for each block size and precision,
// on 16 MiB of each type (compression only, one thread).
void bm_params(benchmark::State& state, TypeInfo t, osub::DataKind kind) {
  const uint64_t bytes = 16 << 20;
  const uint64_t count = bytes / mpizip::format::elem_bytes(t.dtype);
  const std::vector<uint8_t>& src = data_for(t, kind, bytes);
  std::vector<uint8_t> stream(cpu::max_compressed_size(t.dtype, count));
  cpu::EncodeOptions opt;
  opt.log2_block = static_cast<int>(state.range(0));
  opt.prob_bits = static_cast<int>(state.range(1));
  opt.threads = 1;
  uint64_t written = 0;
  for (auto _ : state) {
    if (cpu::compress(t.dtype, src.data(), count, stream.data(), stream.size(), &written, opt) != Status::kOk) {
      state.SkipWithError("compress failed");
      return;
    }
  }
  const double ratio = static_cast<double>(written) / static_cast<double>(bytes);
  const double bound = cpu::entropy_bound(t.dtype, src.data(), count);
  state.counters["ratio"] = ratio;
  state.counters["over_bound_pct"] = 100 * (ratio / bound - 1);
  state.SetBytesProcessed(static_cast<int64_t>(bytes * state.iterations()));
}

void register_all() {
  for (const TypeInfo& t : kTypes) {
    for (osub::DataKind kind : {osub::DataKind::kUniform, osub::DataKind::kNormal}) {
      std::string name = "codec_cpu_params/" + std::string(osub::elem_type_name(t.elem)) + "/" +
                         std::string(osub::data_kind_name(kind));
      benchmark::RegisterBenchmark(name.c_str(), bm_params, t, kind)
          ->ArgNames({"log2_block", "prob_bits"})
          ->ArgsProduct({{12, 14, 15, 16}, {10, 11, 12, 13, 15}})
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const TypeInfo& t : kTypes) {
    for (osub::DataKind kind : kKinds) {
      if (kind == osub::DataKind::kReal && !g_real) continue;
      std::string name = "codec_cpu/" + std::string(osub::elem_type_name(t.elem)) + "/" +
                         std::string(osub::data_kind_name(kind));
      benchmark::RegisterBenchmark(name.c_str(), bm_codec, t, kind)
          ->ArgNames({"bytes", "threads"})
          ->ArgsProduct({{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}, {1, 2}})
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

void write_json(const std::string& path, const std::string& machine, const std::string& commit) {
  std::ofstream out(path);
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  out << "{\n  \"machine\": \"" << machine << "\",\n  \"commit\": \"" << commit << "\",\n  \"date\": \""
      << date << "\",\n  \"rows\": [\n";
  size_t i = 0;
  for (const auto& [key, r] : g_rows) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "    {\"type\": \"%s\", \"data\": \"%s\", \"bytes\": %llu, \"threads\": %d, \"ratio\": %.4f, "
                  "\"bound\": %.4f, \"compress_gbps\": %.3f, \"decompress_gbps\": %.3f}%s\n",
                  r.type.c_str(), r.data.c_str(), static_cast<unsigned long long>(r.bytes), r.threads, r.ratio,
                  r.bound, r.compress_gbps, r.decompress_gbps, ++i < g_rows.size() ? "," : "");
    out << line;
  }
  out << "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string json, machine = "unknown", commit = "unknown";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--json=", 0) == 0) json = a.substr(7);
    else if (a.rfind("--machine=", 0) == 0) machine = a.substr(10);
    else if (a.rfind("--commit=", 0) == 0) commit = a.substr(9);
    else rest.push_back(argv[i]);
  }
  std::string error;
  g_real = osub::RealWeights::load(osub::RealWeights::default_path(), error);
  register_all();
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!json.empty()) write_json(json, machine, commit);
  return 0;
}
