// What the standalone GPU benchmarks (osu-bench/codec, osu-bench/fold, osu-bench/tma_sweep,
// osu-bench/gpu_sharing, osu-bench/staged_latency, osu-bench/ipc_latency) share: failing loudly on
// a CUDA or MPIZip error, their option values (sizes with K/M/G suffixes, comma lists, the latency
// references' -m and -i) and medians.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/platform/status.h"

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_OK(call)                                                                      \
  do {                                                                                      \
    mpizip::Status s_ = (call);                                                                   \
    if (s_ != mpizip::Status::kOk) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, mpizip::status_string(s_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace osub::bench {

// The median of a sample (the upper one of an even count).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline uint64_t parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<uint64_t>(v);
}

inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

// The options of the two-rank latency references (staged_latency, ipc_latency): -m MIN:MAX
// (message sizes, doubling) and -i ITERS (at least 10). False on anything else.
inline bool parse_range_iters(int argc, char** argv, size_t* lo, size_t* hi, int* iters) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-m")) {
      if (std::sscanf(argv[i + 1], "%zu:%zu", lo, hi) != 2 || *lo == 0 || *lo > *hi) return false;
    } else if (!std::strcmp(argv[i], "-i")) {
      *iters = std::max(10, std::atoi(argv[i + 1]));
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace osub::bench
