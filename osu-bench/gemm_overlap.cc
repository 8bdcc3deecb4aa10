// GEMM overlap: how much an allreduce running beside it slows a cuBLAS GEMM. Every rank runs
// --gemms bf16 GEMMs (M = N = K = --dim, fp32 accumulation) on a stream of its own, first alone,
// then while its host thread calls MPI_Allreduce (fp32 sum, --bytes, device buffers) as many times
// as fit in the GEMMs' time alone. Run it with MPIZip preloaded under different settings (the TMA
// path at 8 CTAs, the SM load/store path at several CTA counts: osu-bench/gemm_overlap.sh) and
// compare the slowdown at equal allreduce bandwidth. Rank 0 prints one JSON object:
//
//   {"ranks": 2, "dim": 8192, "gemm_ms_alone": ..., "gemm_ms_overlap": ..., "slowdown": ...,
//    "allreduce_bytes": ..., "allreduce_gbs_alone": ..., "allreduce_gbs_overlap": ..., "label": ...}
//
// Times are the slowest rank's. Only MPI, the CUDA runtime and cuBLAS are used.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

int rank = 0, nranks = 1;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 2);
}
void check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "rank %d: %s: cuBLAS status %d\n", rank, what, static_cast<int>(s));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

double max_over_ranks(double v) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int dim = 8192, gemms = 20;
  uint64_t bytes = 64ull << 20;
  std::string label = "";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dim") dim = std::atoi(argv[i + 1]);
    else if (a == "--gemms") gemms = std::atoi(argv[i + 1]);
    else if (a == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--label") label = argv[i + 1];
  }
  const size_t n = static_cast<size_t>(dim) * dim;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  check(cudaMalloc(&a, n * 2), "cudaMalloc");
  check(cudaMalloc(&b, n * 2), "cudaMalloc");
  check(cudaMalloc(&c, n * 2), "cudaMalloc");
  {
    std::vector<__nv_bfloat16> h(n);
    std::mt19937 g(7 + rank);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : h) x = __float2bfloat16(u(g));
    check(cudaMemcpy(a, h.data(), n * 2, cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(b, h.data(), n * 2, cudaMemcpyHostToDevice), "upload");
  }
  const int count = static_cast<int>(bytes / 4);
  float *in = nullptr, *out = nullptr;
  check(cudaMalloc(&in, bytes), "cudaMalloc");
  check(cudaMalloc(&out, bytes), "cudaMalloc");
  {
    std::vector<float> h(count);
    std::mt19937 g(99 + rank);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& x : h) x = u(g);
    check(cudaMemcpy(in, h.data(), bytes, cudaMemcpyHostToDevice), "upload");
  }
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cublasHandle_t h;
  check(cublasCreate(&h), "cublasCreate");
  check(cublasSetStream(h, s), "cublasSetStream");
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, a, CUDA_R_16BF, dim, b,
                       CUDA_R_16BF, dim, &zero, c, CUDA_R_16BF, dim, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  };
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  auto run_gemms = [&](auto&& beside) {
    MPI_Barrier(MPI_COMM_WORLD);
    check(cudaEventRecord(e0, s), "record");
    for (int i = 0; i < gemms; ++i) gemm();
    check(cudaEventRecord(e1, s), "record");
    beside();
    check(cudaEventSynchronize(e1), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    return max_over_ranks(ms);
  };
  // Warm-up: cuBLAS's kernels, MPIZip's group and mappings.
  gemm();
  check(cudaStreamSynchronize(s), "sync");
  for (int i = 0; i < 3; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  // The allreduce alone.
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  const int probe = 10;
  for (int i = 0; i < probe; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const double ar_alone = max_over_ranks((MPI_Wtime() - t0) / probe);
  // The GEMMs alone, then with allreduces beside them.
  const double gemm_alone = run_gemms([] {});
  int calls = static_cast<int>(gemm_alone / 1e3 / ar_alone);
  calls = std::max(calls, 1);
  MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
  double ar_time = 0;
  const double gemm_overlap = run_gemms([&] {
    const double t = MPI_Wtime();
    for (int i = 0; i < calls; ++i) MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    ar_time = MPI_Wtime() - t;
  });
  ar_time = max_over_ranks(ar_time);
  if (rank == 0) {
    std::printf("{\"label\": \"%s\", \"ranks\": %d, \"dim\": %d, \"gemms\": %d, "
                "\"gemm_ms_alone\": %.3f, \"gemm_ms_overlap\": %.3f, \"slowdown\": %.4f, "
                "\"allreduce_bytes\": %llu, \"allreduce_calls\": %d, \"allreduce_gbs_alone\": %.2f, "
                "\"allreduce_gbs_overlap\": %.2f}\n",
                label.c_str(), nranks, dim, gemms, gemm_alone, gemm_overlap,
                gemm_overlap / gemm_alone, static_cast<unsigned long long>(bytes), calls,
                bytes / ar_alone / 1e9, bytes * static_cast<double>(calls) / ar_time / 1e9);
  }
  cublasDestroy(h);
  MPI_Finalize();
  return 0;
}
