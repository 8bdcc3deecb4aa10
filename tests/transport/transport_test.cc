// The transports of src/transport/transport.h with host buffers, under MPI (2 or more ranks):
//
//   transport_test KIND FORCE_INTERNODE        KIND: pmpi or emulated; FORCE_INTERNODE: 0 or 1
//
// Sizes from 0 to 4 MiB to every peer and to itself and 64 MiB to the next rank, many concurrent
// transfers in both directions posted in different orders on the two sides, 64-bit tags beyond
// MPI_TAG_UB, a sender that sends fewer or more bytes than the receiver posted, a receive destroyed
// before its sender came, argument errors, and (emulated link, between ranks on different nodes)
// the pacing: 32 MiB at 1 GB/s take at least 33.5 ms plus the latency. Bit-exact checks throughout.
// Exits non-zero on a failure.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "src/platform/device.h"
#include "src/transport/transport.h"
#include "tests/transport/harness.h"

namespace {

using namespace transport_test;

constexpr double kGbps = 1.0;          // emulated link: 10^9 bytes per second
constexpr double kLatencyUs = 200.0;   // emulated link latency

// Every rank sends `bytes` to every rank (itself included) and receives from every rank; or, with
// `ring`, to its right neighbour only.
void exchange(Transport* t, uint64_t bytes, uint64_t tag, bool ring = false) {
  std::vector<Posted> all;
  for (int d = ring ? 1 : 0; d < (ring ? 2 : size); ++d) {
    const int from = (rank - d + size) % size;
    all.push_back(post_recv(t, from, tag, bytes, bytes));
    all.push_back(post_send(t, (rank + d) % size, tag, bytes));
  }
  complete(t, &all);
}

// Many transfers of mixed sizes with every peer at once, both directions, with distinct tags;
// receives are posted in a shuffled order, so the transport matches by tag, not by order.
void concurrent(Transport* t, uint64_t first_tag) {
  constexpr int kPerPeer = 16;
  const uint64_t sizes[] = {0, 17, 4096, 65536 + 9, (4u << 20) + 1, 300000, 1000, 70000};
  auto size_of = [&](uint64_t tag) { return sizes[tag % (sizeof sizes / sizeof sizes[0])]; };
  std::vector<Posted> all;
  std::vector<std::pair<int, uint64_t>> receives;
  for (int peer = 0; peer < size; ++peer) {
    for (int k = 0; k < kPerPeer; ++k) receives.emplace_back(peer, first_tag + k);
  }
  std::mt19937 g(1234 + rank);
  std::shuffle(receives.begin(), receives.end(), g);
  for (auto [peer, tag] : receives) {
    all.push_back(post_recv(t, peer, tag, size_of(tag), size_of(tag)));
  }
  for (int k = 0; k < kPerPeer; ++k) {
    for (int peer = 0; peer < size; ++peer) {
      const uint64_t tag = first_tag + k;
      all.push_back(post_send(t, peer, tag, size_of(tag)));
    }
  }
  complete(t, &all);
}

// Senders that send fewer or more bytes than the receiver posted, across segment boundaries.
void mismatched_sizes(Transport* t, uint64_t first_tag) {
  const std::pair<uint64_t, uint64_t> cases[] = {
      {1000, 5000},                       // fewer
      {4u << 20, 8u << 20},               // fewer, ending on a segment boundary
      {(5u << 20) + 10, (1u << 20) + 5},  // more: truncated
      {(8u << 20) + 1, 4u << 20},         // more: whole segments dropped
      {100, 0},                           // more, into nothing
  };
  const int right = (rank + 1) % size, left = (rank - 1 + size) % size;
  std::vector<Posted> all;
  uint64_t tag = first_tag;
  for (auto [sent, capacity] : cases) {
    all.push_back(post_recv(t, left, tag, capacity, sent));
    all.push_back(post_send(t, right, tag, sent));
    ++tag;
  }
  complete(t, &all);
}

// A receive that no send ever matches, destroyed: must be cancelled, not waited for; the
// transport keeps working.
void abandoned_receive(Transport* t, uint64_t tag) {
  std::vector<uint8_t> buf(1 << 20);
  std::unique_ptr<Transfer> r;
  CHECK_OK(t->irecv(buf.data(), buf.size(), Memory::kHost, (rank + 1) % size, tag, &r));
  bool done = true;
  CHECK_OK(r->test(&done));
  CHECK(!done, "a receive without a sender completed");
  r.reset();
  exchange(t, 12345, tag + 1);
}

void argument_errors(Transport* t) {
  std::vector<uint8_t> buf(64);
  std::unique_ptr<Transfer> x;
  CHECK(t->isend(buf.data(), buf.size(), Memory::kHost, size, 1, &x) == Status::kInvalidArgument,
        "send to rank %d accepted", size);
  CHECK(t->irecv(buf.data(), buf.size(), Memory::kHost, -1, 1, &x) == Status::kInvalidArgument,
        "receive from rank -1 accepted");
  CHECK(t->isend(nullptr, 8, Memory::kHost, rank, 1, &x) == Status::kInvalidArgument,
        "send from a null buffer accepted");
  if (!mpizip::platform::has_gpu()) {
    CHECK(t->isend(buf.data(), buf.size(), Memory::kDevice, rank, 1, &x) == Status::kNoDevice,
          "device memory accepted without a GPU");
  }
}

// Rank 0 sends 32 MiB and then 0 bytes to rank 1 over the emulated link (1 GB/s): the send takes
// at least bytes / rate, the receive completes no earlier than that plus the latency after the send
// was posted. Only between ranks on different (emulated) nodes.
void pacing(Transport* t, uint64_t tag) {
  if (size < 2) return;
  const bool paced_pair = rank <= 1 && !t->same_node(1 - rank);
  for (uint64_t bytes : {uint64_t{32} << 20, uint64_t{0}}) {
    const int64_t wire_ns = static_cast<int64_t>(static_cast<double>(bytes) / kGbps);
    const int64_t min_ns = wire_ns + static_cast<int64_t>(kLatencyUs * 1000);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!paced_pair) continue;
    std::vector<Posted> all;
    int64_t posted = now_ns();
    if (rank == 0) {
      all.push_back(post_send(t, 1, tag, bytes));
    } else {
      all.push_back(post_recv(t, 0, tag, bytes, bytes));
    }
    complete(t, &all);
    if (rank == 0) {
      const int64_t elapsed = all[0].done_ns - posted;
      CHECK(elapsed >= wire_ns * 99 / 100, "%llu bytes left in %.3f ms at %g GB/s",
            static_cast<unsigned long long>(bytes), elapsed / 1e6, kGbps);
      MPI_Send(&posted, 1, MPI_INT64_T, 1, 0, MPI_COMM_WORLD);
    } else {
      int64_t sender_posted = 0;
      MPI_Recv(&sender_posted, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const int64_t since_send = all[0].done_ns - sender_posted;
      CHECK(since_send >= min_ns * 99 / 100,
            "%llu bytes arrived %.3f ms after the send was posted, expected at least %.3f",
            static_cast<unsigned long long>(bytes), since_send / 1e6, min_ns / 1e6);
      CHECK(since_send < min_ns + 2'000'000'000, "%llu bytes took %.3f ms",
            static_cast<unsigned long long>(bytes), since_send / 1e6);
    }
    ++tag;
  }
}

mpizip::transport::Kind parse_kind(const char* s) {
  using mpizip::transport::Kind;
  if (std::strcmp(s, "emulated") == 0) return Kind::kEmulated;
  CHECK(std::strcmp(s, "pmpi") == 0, "unknown kind %s", s);
  return Kind::kPmpi;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace transport_test;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(argc == 3, "usage: transport_test pmpi|emulated 0|1");

  mpizip::transport::Options options;
  options.kind = parse_kind(argv[1]);
  options.force_internode = std::strcmp(argv[2], "1") == 0;
  options.emu_gbps = kGbps;
  options.emu_latency_us = kLatencyUs;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::unique_ptr<Transport> t;
  CHECK_OK(mpizip::transport::create(comm, options, &t));
  CHECK(t->same_node(rank), "a rank is not on its own node");
  for (int p = 0; p < size; ++p) {
    CHECK(!options.force_internode || p == rank || !t->same_node(p),
          "force_internode, yet rank %d shares the node", p);
  }
  if (rank == 0) {
    std::printf("transport_test %s force_internode=%s: %s\n", argv[1], argv[2], t->name());
  }

  uint64_t tag = 100;
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{(1 << 20) + 3}}) {
    exchange(t.get(), bytes, tag++);
  }
  exchange(t.get(), uint64_t{64} << 20, tag++, true);
  concurrent(t.get(), 1000);
  int* tag_ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &flag);
  CHECK(flag, "no MPI_TAG_UB");
  exchange(t.get(), 3000, static_cast<uint64_t>(*tag_ub) + 7);
  exchange(t.get(), (4u << 20) + 5, (uint64_t{1} << 40) + 12345);
  exchange(t.get(), 33, UINT64_MAX);
  mismatched_sizes(t.get(), 2000);
  abandoned_receive(t.get(), 3000);
  argument_errors(t.get());
  if (options.kind == mpizip::transport::Kind::kEmulated) pacing(t.get(), 4000);

  t.reset();
  MPI_Comm_free(&comm);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("transport_test: passed on %d ranks\n", size);
  MPI_Finalize();
  return 0;
}
