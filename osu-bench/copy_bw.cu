// copy_bw: the bandwidth of cudaMemcpyAsync device to device on one GPU, the reference that CUDA
// IPC between ranks of one node is measured against (osu-bench/results/README.md). Prints OSU's
// layout ("# Size  Bandwidth (MB/s)", MB = 10^6 bytes copied per second): the median of -i timed
// copies (CUDA events) after -x warm-up ones, rotating over enough buffer pairs that the
// working set exceeds the L2 cache several times over.
//
// usage: copy_bw [-m MIN:MAX] [-i ITERS] [-x WARMUP]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "copy_bw: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  size_t lo = size_t{64} << 20, hi = size_t{1} << 30;
  int iters = 20, warmup = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-m")) {
      if (std::sscanf(argv[i + 1], "%zu:%zu", &lo, &hi) != 2 || lo == 0 || lo > hi) {
        std::fprintf(stderr, "copy_bw: -m takes MIN:MAX\n");
        return 2;
      }
    } else if (!std::strcmp(argv[i], "-i")) {
      iters = std::max(1, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "-x")) {
      warmup = std::max(0, std::atoi(argv[i + 1]));
    } else {
      std::fprintf(stderr, "usage: copy_bw [-m MIN:MAX] [-i ITERS] [-x WARMUP]\n");
      return 2;
    }
  }
  int dev = 0;
  cudaDeviceProp prop{};
  if (!check(cudaGetDevice(&dev), "cudaGetDevice") ||
      !check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties")) {
    return 77;
  }
  std::printf("# copy_bw: cudaMemcpyAsync device to device, %s\n", prop.name);
  std::printf("# Size      Bandwidth (MB/s)\n");
  cudaStream_t s;
  cudaEvent_t e0, e1;
  if (!check(cudaStreamCreate(&s), "cudaStreamCreate") || !check(cudaEventCreate(&e0), "event") ||
      !check(cudaEventCreate(&e1), "event")) {
    return 1;
  }
  for (size_t n = lo; n <= hi; n *= 2) {
    // Pairs of buffers: at least 4x the L2 in all, at most 4 pairs.
    const size_t l2 = static_cast<size_t>(prop.l2CacheSize);
    const int pairs = static_cast<int>(std::min<size_t>(4, std::max<size_t>(1, 4 * l2 / n + 1)));
    std::vector<void*> src(pairs), dst(pairs);
    bool ok = true;
    for (int p = 0; p < pairs && ok; ++p) {
      ok = check(cudaMalloc(&src[p], n), "cudaMalloc") && check(cudaMalloc(&dst[p], n), "cudaMalloc") &&
           check(cudaMemset(src[p], p + 1, n), "cudaMemset");
    }
    if (!ok) return 1;
    std::vector<float> ms;
    for (int i = 0; i < warmup + iters; ++i) {
      const int p = i % pairs;
      cudaEventRecord(e0, s);
      cudaMemcpyAsync(dst[p], src[p], n, cudaMemcpyDeviceToDevice, s);
      cudaEventRecord(e1, s);
      if (!check(cudaEventSynchronize(e1), "copy")) return 1;
      float t = 0;
      cudaEventElapsedTime(&t, e0, e1);
      if (i >= warmup) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const float med = ms[ms.size() / 2];
    std::printf("%-10zu%18.2f\n", n, static_cast<double>(n) / (med * 1e-3) / 1e6);
    for (int p = 0; p < pairs; ++p) {
      cudaFree(src[p]);
      cudaFree(dst[p]);
    }
  }
  return 0;
}
