#include "osu-bench/common/buffer.h"

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if MPIZIP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace osub {

namespace {

#if MPIZIP_HAVE_CUDA
void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fatal(std::string(what) + ": " + cudaGetErrorString(err));
}
#endif

std::byte* host_alloc(size_t bytes) {
  auto* p = static_cast<std::byte*>(std::malloc(bytes ? bytes : 1));
  if (!p) fatal("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

}  // namespace

const char* location_name(Location l) { return l == Location::kHost ? "host" : "device"; }

bool device_buffers_built() {
#if MPIZIP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool mpi_accepts_device_pointers() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

void fatal(const std::string& message) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "[rank %d] error: %s\n", rank, message.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}

#if MPIZIP_HAVE_CUDA

Buffer::Buffer(Location loc, size_t bytes, bool stage)
    : loc_(loc), bytes_(bytes), staged_(stage && loc == Location::kDevice) {
  if (loc_ == Location::kHost) {
    data_ = host_alloc(bytes_);
    return;
  }
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&data_), bytes_ ? bytes_ : 1), "cudaMalloc");
  if (staged_)
    cuda_check(cudaMallocHost(reinterpret_cast<void**>(&staging_), bytes_ ? bytes_ : 1),
               "cudaMallocHost");
}

Buffer::~Buffer() {
  if (loc_ == Location::kHost) {
    std::free(data_);
    return;
  }
  if (staging_) cudaFreeHost(staging_);
  cudaFree(data_);
}

void Buffer::upload(const std::byte* host, size_t n) {
  if (loc_ == Location::kHost)
    std::memcpy(data_, host, n);
  else
    cuda_check(cudaMemcpy(data_, host, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void Buffer::download(std::byte* host, size_t n) const {
  if (loc_ == Location::kHost)
    std::memcpy(host, data_, n);
  else
    cuda_check(cudaMemcpy(host, data_, n, cudaMemcpyDeviceToHost), "cudaMemcpy from device");
}

void Buffer::fill(uint8_t value, size_t n) {
  if (loc_ == Location::kHost)
    std::memset(data_, value, n);
  else
    cuda_check(cudaMemset(data_, value, n), "cudaMemset");
}

void* Buffer::send_view(size_t n) {
  if (!staged_) return data_;
  cuda_check(cudaMemcpy(staging_, data_, n, cudaMemcpyDeviceToHost), "cudaMemcpy to staging");
  return staging_;
}

void* Buffer::recv_view() { return staged_ ? staging_ : data_; }

void Buffer::received(size_t n) {
  if (staged_)
    cuda_check(cudaMemcpy(data_, staging_, n, cudaMemcpyHostToDevice), "cudaMemcpy from staging");
}

#else  // host memory only

Buffer::Buffer(Location loc, size_t bytes, bool stage) : loc_(loc), bytes_(bytes), staged_(false) {
  if (loc_ == Location::kDevice) fatal("device buffers need a build with CUDA");
  data_ = host_alloc(bytes_);
}

Buffer::~Buffer() { std::free(data_); }
void Buffer::upload(const std::byte* host, size_t n) { std::memcpy(data_, host, n); }
void Buffer::download(std::byte* host, size_t n) const { std::memcpy(host, data_, n); }
void Buffer::fill(uint8_t value, size_t n) { std::memset(data_, value, n); }
void* Buffer::send_view(size_t) { return data_; }
void* Buffer::recv_view() { return data_; }
void Buffer::received(size_t) {}

#endif

}  // namespace osub
