// Point-to-point with device buffers under MPIZip (2-4 ranks sharing the GPU): every protocol
// datatype at sizes from 0 to `max_bytes` (blocking and non-blocking, compressed above
// MPIZIP_MIN_BYTES), plain datatypes staged through host memory (MPI_INT, a strided vector whose
// gaps must keep their contents), truncation, and MPI_ANY_SOURCE. Bit-exact against the host data
// each rank generated. Exit 77 without a GPU.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "include/mpizip.h"

namespace {

int rank = 0, size = 0;

#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__);     \
      std::fprintf(stderr, __VA_ARGS__);                                      \
      std::fprintf(stderr, "\n");                                             \
      MPI_Abort(MPI_COMM_WORLD, 1);                                           \
    }                                                                         \
  } while (0)
#define CUDA(call) CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

// Float-like bytes: U[-1,1] floats, their top bits for the narrow types.
std::vector<uint8_t> make_data(uint64_t bytes, int esize, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (uint64_t i = 0; i + esize <= bytes; i += esize) {
    float f = u(g);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (esize == 8) {
      double d = f;
      std::memcpy(&v[i], &d, 8);
    } else if (esize == 4) {
      std::memcpy(&v[i], &x, 4);
    } else if (esize == 2) {
      uint16_t h = static_cast<uint16_t>(x >> 16);
      std::memcpy(&v[i], &h, 2);
    } else {
      v[i] = static_cast<uint8_t>(x >> 24);
    }
  }
  return v;
}

void exchange(MPI_Datatype type, int esize, uint64_t bytes, int tag, bool blocking) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  int count = static_cast<int>(bytes / esize);
  bytes = static_cast<uint64_t>(count) * esize;
  auto mine = make_data(bytes, esize, rank * 7919 + tag);
  auto want = make_data(bytes, esize, left * 7919 + tag);
  void *dout = nullptr, *din = nullptr;
  CUDA(cudaMalloc(&dout, bytes + 64));
  CUDA(cudaMalloc(&din, bytes + 64));
  CUDA(cudaMemcpy(dout, mine.data(), bytes, cudaMemcpyHostToDevice));
  CUDA(cudaMemset(din, 0xA5, bytes + 64));
  MPI_Status st;
  if (blocking) {
    if (rank % 2 == 0) {
      MPI_Send(dout, count, type, right, tag, MPI_COMM_WORLD);
      MPI_Recv(din, count, type, left, tag, MPI_COMM_WORLD, &st);
    } else {
      MPI_Recv(din, count, type, left, tag, MPI_COMM_WORLD, &st);
      MPI_Send(dout, count, type, right, tag, MPI_COMM_WORLD);
    }
  } else {
    MPI_Request r[2];
    MPI_Status sts[2];
    MPI_Irecv(din, count, type, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(dout, count, type, right, tag, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, sts);
    st = sts[0];
  }
  int got = -1;
  MPI_Get_count(&st, type, &got);
  CHECK(got == count && st.MPI_SOURCE == left, "count %d of %d from %d", got, count, st.MPI_SOURCE);
  std::vector<uint8_t> back(bytes + 64);
  CUDA(cudaMemcpy(back.data(), din, bytes + 64, cudaMemcpyDeviceToHost));
  CHECK(std::memcmp(back.data(), want.data(), bytes) == 0, "data, %llu bytes, esize %d",
        static_cast<unsigned long long>(bytes), esize);
  CHECK(back[bytes] == 0xA5 && back[bytes + 63] == 0xA5, "wrote past the buffer");
  CUDA(cudaFree(dout));
  CUDA(cudaFree(din));
}

// A strided vector of ints on the device: the gaps between blocks keep the receiver's contents.
void strided() {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Datatype vec;
  MPI_Type_vector(1000, 3, 5, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  std::vector<int> out(5000), in(5000, -1);
  for (int i = 0; i < 5000; ++i) out[i] = rank * 100000 + i;
  int *dout, *din;
  CUDA(cudaMalloc(&dout, sizeof(int) * 5000));
  CUDA(cudaMalloc(&din, sizeof(int) * 5000));
  CUDA(cudaMemcpy(dout, out.data(), sizeof(int) * 5000, cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(din, in.data(), sizeof(int) * 5000, cudaMemcpyHostToDevice));
  MPI_Sendrecv(dout, 1, vec, right, 5, din, 1, vec, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CUDA(cudaMemcpy(in.data(), din, sizeof(int) * 5000, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 5000; ++i) {
    int want = (i % 5 < 3 && i < 4998) ? left * 100000 + i : -1;
    CHECK(in[i] == want, "strided element %d: %d, want %d", i, in[i], want);
  }
  MPI_Type_free(&vec);
  CUDA(cudaFree(dout));
  CUDA(cudaFree(din));
}

// Truncation of a compressed device message: MPI_ERR_TRUNCATE, the first elements delivered.
void truncation() {
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const int n = 1 << 20;
  auto mine = make_data(2 * n, 2, rank + 5);
  auto want = make_data(2 * n, 2, left + 5);
  void *dout, *din;
  CUDA(cudaMalloc(&dout, 2 * n));
  CUDA(cudaMalloc(&din, 2 * n));
  CUDA(cudaMemcpy(dout, mine.data(), 2 * n, cudaMemcpyHostToDevice));
  MPI_Request r;
  MPI_Isend(dout, n, MPIZIP_BF16, right, 3, c, &r);
  int rc = MPI_Recv(din, n / 2, MPIZIP_BF16, left, 3, c, MPI_STATUS_IGNORE);
  int cls;
  MPI_Error_class(rc, &cls);
  CHECK(cls == MPI_ERR_TRUNCATE, "truncation class %d", cls);
  std::vector<uint8_t> back(n);
  CUDA(cudaMemcpy(back.data(), din, n, cudaMemcpyDeviceToHost));
  CHECK(std::memcmp(back.data(), want.data(), n) == 0, "truncated data");
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Comm_free(&c);
  CUDA(cudaFree(dout));
  CUDA(cudaFree(din));
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("p2p_device: no GPU, skipped\n");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--gpu-present") == 0) return 0;  // for the driver script
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(MPIZip_Active(), "this test needs MPIZip preloaded (device buffers, non-CUDA-aware MPI)");
  uint64_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (64ull << 20);
  struct { MPI_Datatype t; int esize; } types[] = {
      {MPI_FLOAT, 4}, {MPI_DOUBLE, 8}, {MPIZIP_BF16, 2}, {MPIZIP_FP16, 2},
      {MPIZIP_FP8_E4M3, 1}, {MPIZIP_FP8_E5M2, 1}, {MPI_INT, 4}};
  const uint64_t sizes[] = {0, 1, 1000, 8192, 16385, 1 << 20, 16 << 20, 256 << 20, 1ull << 30};
  int tag = 0;
  for (auto& ty : types) {
    for (uint64_t s : sizes) {
      if (s > max_bytes) continue;
      if (s > (16u << 20) && ty.t != MPIZIP_BF16 && ty.t != MPI_FLOAT) continue;
      for (bool blocking : {true, false}) exchange(ty.t, ty.esize, s, ++tag, blocking);
    }
  }
  strided();
  truncation();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("p2p_device: ok on %d ranks, up to %llu bytes\n", size, static_cast<unsigned long long>(max_bytes));
  MPI_Finalize();
  return 0;
}
