// The intra-node collectives' sweep: MPI_Allreduce (fp32), MPI_Reduce_scatter_block (fp32) and
// MPI_Allgather (bytes) on device buffers, timed at every size from --min to --max (powers of two,
// or of --step), with whatever configuration the environment gives MPIZip (osu-bench/tma_sweep.sh
// runs it once per CTA count with MPIZIP_TMA_CTAS). Data: U[-1,1] in fp32. Rank 0 prints one JSON
// object per line:
//
//   {"coll": "allreduce", "ranks": 2, "bytes": 1048576, "ctas": 8, "iters": 200, "us": 41.2,
//    "algbw_gbs": 25.4}
//
// "bytes" is the size the tuning table is keyed by: an allreduce's buffer, a reduce-scatter-block's
// input (ranks x recvcount elements), an allgather's output. "us" is the mean time of one call (the
// slowest rank's), "algbw_gbs" bytes / us / 1000. Only MPI and the CUDA runtime are used.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "osu-bench/common/bench_util.h"

namespace {

using osub::bench::parse_size;

int rank = 0, nranks = 1;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

enum class Coll { kAllreduce, kRsb, kAllgather };
const char* name(Coll c) {
  return c == Coll::kAllreduce ? "allreduce" : c == Coll::kRsb ? "reduce_scatter_block" : "allgather";
}

void call(Coll c, void* in, void* out, uint64_t bytes) {
  const int P = nranks;
  switch (c) {
    case Coll::kAllreduce:
      MPI_Allreduce(in, out, static_cast<int>(bytes / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case Coll::kRsb:
      MPI_Reduce_scatter_block(in, out, static_cast<int>(bytes / 4 / P), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
      break;
    case Coll::kAllgather:
      MPI_Allgather(in, static_cast<int>(bytes / P), MPI_BYTE, out, static_cast<int>(bytes / P),
                    MPI_BYTE, MPI_COMM_WORLD);
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  uint64_t lo = 1024, hi = uint64_t{1} << 30, step = 2;
  double budget_s = 0.2;
  int ctas_label = 0;
  std::vector<Coll> colls = {Coll::kAllreduce, Coll::kRsb, Coll::kAllgather};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--min") lo = parse_size(argv[i + 1]);
    else if (a == "--max") hi = parse_size(argv[i + 1]);
    else if (a == "--step") step = std::max<uint64_t>(2, parse_size(argv[i + 1]));
    else if (a == "--time") budget_s = std::atof(argv[i + 1]);
    else if (a == "--ctas") ctas_label = std::atoi(argv[i + 1]);
    else if (a == "--colls") {
      colls.clear();
      const std::string v = argv[i + 1];
      if (v.find("allreduce") != std::string::npos) colls.push_back(Coll::kAllreduce);
      if (v.find("rsb") != std::string::npos) colls.push_back(Coll::kRsb);
      if (v.find("allgather") != std::string::npos) colls.push_back(Coll::kAllgather);
    }
  }
  const uint64_t unit = 4 * static_cast<uint64_t>(nranks);
  const uint64_t cap = (hi + unit - 1) / unit * unit;
  void *in = nullptr, *out = nullptr;
  check(cudaMalloc(&in, cap), "cudaMalloc");
  check(cudaMalloc(&out, cap), "cudaMalloc");
  {
    std::vector<float> h(cap / 4);
    std::mt19937 g(1234 + rank);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : h) x = u(g);
    check(cudaMemcpy(in, h.data(), cap, cudaMemcpyHostToDevice), "upload");
  }
  for (Coll c : colls) {
    for (uint64_t size = lo; size <= hi; size *= step) {
      const uint64_t bytes = std::max(unit, size / unit * unit);
      // A warm-up call, then two timed ones decide how many iterations fill the time budget.
      call(c, in, out, bytes);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      call(c, in, out, bytes);
      call(c, in, out, bytes);
      double probe = (MPI_Wtime() - t0) / 2;
      MPI_Bcast(&probe, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      int iters = static_cast<int>(std::clamp(budget_s / std::max(probe, 1e-7), 3.0, 1000.0));
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) call(c, in, out, bytes);
      double t = (MPI_Wtime() - t0) / iters, tmax = 0;
      MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        std::printf("{\"coll\": \"%s\", \"ranks\": %d, \"bytes\": %llu, \"ctas\": %d, "
                    "\"iters\": %d, \"us\": %.3f, \"algbw_gbs\": %.3f}\n",
                    name(c), nranks, static_cast<unsigned long long>(bytes), ctas_label, iters,
                    tmax * 1e6, static_cast<double>(bytes) / tmax / 1e9);
        std::fflush(stdout);
      }
    }
  }
  cudaFree(in);
  cudaFree(out);
  MPI_Finalize();
  return 0;
}
