// The transports of src/transport/transport.h with device buffers, under MPI on ranks sharing a
// GPU machine (2-4 ranks, one GPU is enough). Each rank builds, one after the other:
//   - the node-local transport: device buffers pulled through CUDA IPC;
//   - PMPI between ranks made nodes of their own: device buffers staged through pinned memory;
//   - the same with no pinned memory allowed: staged through pageable memory;
//   - the emulated link (1 GB/s) between nodes of their own: device to device through CUDA IPC,
//     paced; 32 MiB take at least 33.5 ms plus the latency.
// With each: sizes from 0 to 64 MiB to every peer and to itself, device to host and host to device,
// a buffer at an offset in its allocation, many concurrent transfers, a sender that sends more
// than the receiver holds, and the IPC mapping cache across cudaFree and cudaMalloc of a buffer of
// the same size (the new buffer's bytes must arrive, not the freed one's). Exit 77 without a GPU
// (with --gpu-present: exit 0 with a GPU, 77 without, before MPI starts).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/transport/transport.h"
#include "tests/transport/harness.h"

namespace {

using namespace transport_test;
using mpizip::transport::Kind;
using mpizip::transport::Options;

#define CUDA(call) \
  CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

constexpr double kGbps = 1.0;
constexpr double kLatencyUs = 200.0;

// A device allocation of `bytes` (at least 1, so that every buffer has an address).
std::shared_ptr<void> device_alloc(uint64_t bytes) {
  void* p = nullptr;
  CUDA(cudaMalloc(&p, bytes > 0 ? bytes : 1));
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

void fetch(Posted* p, uint64_t bytes) {
  p->host.resize(bytes);
  CUDA(cudaMemcpy(p->host.data(), p->device.get(), bytes, cudaMemcpyDeviceToHost));
}

// A send of pattern(rank, peer, tag, bytes, round) from device memory, `offset` bytes into its
// allocation.
Posted post_device_send(Transport* t, int peer, uint64_t tag, uint64_t bytes, uint64_t offset = 0,
                        uint64_t round = 0) {
  Posted p;
  std::vector<uint8_t> data = pattern(rank, peer, tag, bytes, round);
  p.device = device_alloc(offset + bytes);
  char* at = static_cast<char*>(p.device.get()) + offset;
  CUDA(cudaMemcpy(at, data.data(), bytes, cudaMemcpyHostToDevice));
  p.what = "device send of " + std::to_string(bytes) + " bytes to " + std::to_string(peer) +
           " tag " + std::to_string(tag);
  CHECK_OK(t->isend(at, bytes, Memory::kDevice, peer, tag, &p.transfer));
  return p;
}

// A receive into device memory of `capacity` bytes from `peer`, who sends `sent` bytes.
Posted post_device_recv(Transport* t, int peer, uint64_t tag, uint64_t capacity, uint64_t sent,
                        uint64_t round = 0) {
  Posted p;
  p.device = device_alloc(capacity);
  CUDA(cudaMemset(p.device.get(), 0xEE, capacity > 0 ? capacity : 1));
  expect(&p, peer, tag, capacity, sent, round);
  p.what = "device " + p.what;
  CHECK_OK(t->irecv(p.device.get(), capacity, Memory::kDevice, peer, tag, &p.transfer));
  return p;
}

// Every rank sends `bytes` to every rank, itself included: device to device, and on alternate
// tags device to host and host to device.
void all_to_all(Transport* t, uint64_t bytes, uint64_t tag) {
  std::vector<Posted> all;
  for (int d = 0; d < size; ++d) {
    const int from = (rank - d + size) % size, to = (rank + d) % size;
    for (int mix = 0; mix < 3; ++mix) {
      const uint64_t k = tag + mix;
      all.push_back(mix == 1 ? post_recv(t, from, k, bytes, bytes)
                             : post_device_recv(t, from, k, bytes, bytes));
      all.push_back(mix == 2 ? post_send(t, to, k, bytes) : post_device_send(t, to, k, bytes));
    }
  }
  complete(t, &all, fetch);
}

// Many device transfers with every peer at once, receives posted in a shuffled order.
void concurrent(Transport* t, uint64_t first_tag) {
  constexpr int kPerPeer = 16;
  const uint64_t sizes[] = {0, 4096, (4u << 20) + 1, 300000, 1u << 20};
  auto size_of = [&](uint64_t tag) { return sizes[tag % (sizeof sizes / sizeof sizes[0])]; };
  std::vector<std::pair<int, uint64_t>> receives;
  for (int peer = 0; peer < size; ++peer) {
    for (int k = 0; k < kPerPeer; ++k) receives.emplace_back(peer, first_tag + k);
  }
  std::mt19937 g(99 + rank);
  std::shuffle(receives.begin(), receives.end(), g);
  std::vector<Posted> all;
  for (auto [peer, tag] : receives) {
    all.push_back(post_device_recv(t, peer, tag, size_of(tag), size_of(tag)));
  }
  for (int k = 0; k < kPerPeer; ++k) {
    for (int peer = 0; peer < size; ++peer) {
      all.push_back(post_device_send(t, peer, first_tag + k, size_of(first_tag + k), 4096 * k));
    }
  }
  complete(t, &all, fetch);
}

// A sender that sends more than the device buffer holds: the first bytes land, kTruncated.
void truncated(Transport* t, uint64_t tag) {
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  std::vector<Posted> all;
  all.push_back(post_device_recv(t, left, tag, (1u << 20) + 5, (5u << 20) + 10));
  all.push_back(post_device_send(t, right, tag, (5u << 20) + 10));
  complete(t, &all, fetch);
}

// The sender frees its buffer and allocates one of the same size (the allocator hands the same
// address back) between transfers: every transfer must deliver the new buffer's bytes.
void reallocated_buffers(Transport* t, uint64_t tag) {
  constexpr uint64_t kBytes = 4u << 20;
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  for (uint64_t round = 0; round < 4; ++round) {
    std::vector<Posted> all;
    all.push_back(post_device_recv(t, left, tag + round, kBytes, kBytes, round));
    all.push_back(post_device_send(t, right, tag + round, kBytes, 0, round));
    complete(t, &all, fetch);
  }
}

// Rank 0 sends 32 MiB from device memory to rank 1 over the emulated link.
void pacing(Transport* t, uint64_t tag) {
  const bool paced_pair = size >= 2 && rank <= 1 && !t->same_node(1 - rank);
  const uint64_t bytes = 32u << 20;
  const int64_t min_ns = static_cast<int64_t>(bytes / kGbps + kLatencyUs * 1000);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!paced_pair) return;
  std::vector<Posted> all;
  int64_t posted = now_ns();
  all.push_back(rank == 0 ? post_device_send(t, 1, tag, bytes)
                          : post_device_recv(t, 0, tag, bytes, bytes));
  complete(t, &all, fetch);
  if (rank == 0) {
    MPI_Send(&posted, 1, MPI_INT64_T, 1, 0, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&posted, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const int64_t since_send = all[0].done_ns - posted;
    CHECK(since_send >= min_ns * 99 / 100, "32 MiB arrived %.3f ms after the send, expected %.3f",
          since_send / 1e6, min_ns / 1e6);
  }
}

// Builds a transport with `options` on a fresh duplicate of MPI_COMM_WORLD and runs every test.
void run(const char* label, const Options& options) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::unique_ptr<Transport> t;
  CHECK_OK(mpizip::transport::create(comm, options, &t));
  if (rank == 0) std::printf("transport_device %s: %s\n", label, t->name());
  uint64_t tag = 100;
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{(1 << 20) + 3},
                         uint64_t{(9 << 20) + 7}, uint64_t{64} << 20}) {
    all_to_all(t.get(), bytes, tag);
    tag += 3;
  }
  concurrent(t.get(), 1000);
  truncated(t.get(), 2000);
  reallocated_buffers(t.get(), 3000);
  if (options.kind == Kind::kEmulated) pacing(t.get(), 4000);
  t.reset();
  MPI_Comm_free(&comm);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("transport_device: no GPU, skipped\n");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--gpu-present") == 0) return 0;  // the script's probe
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &transport_test::rank);
  MPI_Comm_size(MPI_COMM_WORLD, &transport_test::size);
  CUDA(cudaSetDevice(transport_test::rank % devices));

  Options options;
  options.kind = Kind::kPmpi;
  run("node-local", options);
  options.force_internode = true;
  run("staged", options);
  options.staging_bytes = 0;
  run("staged through pageable memory", options);
  options.staging_bytes = Options().staging_bytes;
  options.kind = Kind::kEmulated;
  options.emu_gbps = kGbps;
  options.emu_latency_us = kLatencyUs;
  run("emulated link", options);

  MPI_Barrier(MPI_COMM_WORLD);
  if (transport_test::rank == 0) {
    std::printf("transport_device: passed on %d ranks\n", transport_test::size);
  }
  MPI_Finalize();
  return 0;
}
