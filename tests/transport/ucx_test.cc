// The UCX transport under MPI, on 2 or more ranks: bit-exact transfers from 0 bytes to 64 MiB
// around a ring (with the bytes past the end of each receive left alone), 100 concurrent transfers
// with distinct tags in both directions, two communicators using the same tags without matching
// each other's messages, received_bytes when the sender sends less than the receive posted,
// truncation, sends to self, same_node with and without force_internode, and the failure of a peer.
//
// Where the process sees a GPU, every transfer also runs with device buffers on either side (the
// transport stages them unless UCX reaches device memory). tests/transport/ucx_staged_test is this
// program linked to a stand-in GPU runtime (ucx_fake_device.cc), so the staging pipeline runs here
// without a GPU. `--big` adds a transfer of 2 GiB + 5 bytes; `--no-peer-failure` leaves out the
// failure of a peer (tests/transport/ucx.sh says where).
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "src/platform/device.h"
#include "src/transport/ucx.h"

namespace {

using mpizip::Status;
using mpizip::status_string;
using mpizip::transport::Memory;
using mpizip::transport::Transfer;
using mpizip::transport::Transport;

int rank = 0, size = 0;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                  \
      std::fprintf(stderr, "\n");                                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                       \
    }                                                                     \
  } while (0)
#define CHECK_OK(expr)                                                              \
  do {                                                                              \
    Status check_ok_s_ = (expr);                                                    \
    CHECK(check_ok_s_ == Status::kOk, "%s: %s", #expr, status_string(check_ok_s_)); \
  } while (0)

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGuard = 64;  // bytes past each receive that must keep their contents

// Bytes [from, from + bytes) of the message identified by `seed` (`from` a multiple of 8): any
// rank can regenerate any part of any message.
std::vector<uint8_t> message(uint64_t seed, uint64_t bytes, uint64_t from = 0) {
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes; i += 8) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (from + i + 1) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    std::memcpy(&v[i], &x, std::min<uint64_t>(8, bytes - i));
  }
  return v;
}

// A buffer in host or device memory, filled and read back through host vectors.
class Buffer {
 public:
  Buffer(uint64_t bytes, Memory where) : where_(where) {
    if (where == Memory::kHost) {
      host_.resize(bytes);
    } else {
      CHECK_OK(device_.allocate(bytes));
    }
  }
  void* data() { return where_ == Memory::kHost ? host_.data() : device_.get(); }
  // Writes `v` at byte `at`.
  void store(const std::vector<uint8_t>& v, uint64_t at = 0) {
    char* p = static_cast<char*>(data()) + at;
    if (where_ == Memory::kHost) {
      std::memcpy(p, v.data(), v.size());
    } else {
      CHECK_OK(mpizip::platform::copy_to_device(p, v.data(), v.size()));
    }
  }
  // Reads `bytes` bytes from byte `at`.
  std::vector<uint8_t> load(uint64_t bytes, uint64_t at) {
    std::vector<uint8_t> v(bytes);
    const char* p = static_cast<const char*>(data()) + at;
    if (where_ == Memory::kHost) {
      std::memcpy(v.data(), p, bytes);
    } else {
      CHECK_OK(mpizip::platform::copy_to_host(v.data(), p, bytes));
    }
    return v;
  }

 private:
  Memory where_;
  std::vector<uint8_t> host_;
  mpizip::platform::DeviceMemory device_;
};

// Tests every transfer in turn until all are done, driving the transport's progress as a progress
// thread would; each must end with `expect`.
void wait_all(Transport& t, std::vector<std::unique_ptr<Transfer>>& transfers,
              Status expect = Status::kOk) {
  std::vector<bool> done(transfers.size(), false);
  for (size_t left = transfers.size(); left > 0;) {
    t.progress();
    for (size_t i = 0; i < transfers.size(); ++i) {
      if (done[i]) continue;
      bool d = false;
      Status s = transfers[i]->test(&d);
      if (s != Status::kOk) d = true;
      if (!d) continue;
      CHECK(s == expect, "transfer %zu ended with '%s', expected '%s'", i, status_string(s),
            status_string(expect));
      done[i] = true;
      --left;
    }
  }
}

constexpr uint64_t kChunk = 64 * kMiB;  // messages are written and checked in chunks

// Fills `b` with the first `bytes` bytes of the message `seed`.
void fill(Buffer& b, uint64_t bytes, uint64_t seed) {
  for (uint64_t at = 0; at < bytes; at += kChunk) {
    b.store(message(seed, std::min(kChunk, bytes - at), at), at);
  }
}

// A receive of `bytes` into a buffer with room for `posted` bytes plus the guard holds the message
// `seed`, and the guard and the bytes past the message kept their 0xA5.
void check_message(Buffer& b, uint64_t posted, uint64_t bytes, uint64_t seed, const char* what) {
  for (uint64_t at = 0; at < posted + kGuard; at += kChunk) {
    uint64_t n = std::min(kChunk, posted + kGuard - at);
    std::vector<uint8_t> want = message(seed, at < bytes ? std::min(n, bytes - at) : 0, at);
    want.resize(n, 0xA5);
    std::vector<uint8_t> got = b.load(n, at);
    if (got == want) continue;
    uint64_t i = 0;
    while (got[i] == want[i]) ++i;
    CHECK(false, "%s: %llu bytes into %llu: byte %llu is %u, expected %u", what,
          static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(posted),
          static_cast<unsigned long long>(at + i), got[i], want[i]);
  }
}

// A receive buffer of `posted` bytes plus the guard, filled with 0xA5.
std::unique_ptr<Buffer> receive_buffer(uint64_t posted, Memory where) {
  auto b = std::make_unique<Buffer>(posted + kGuard, where);
  for (uint64_t at = 0; at < posted + kGuard; at += kChunk) {
    b->store(std::vector<uint8_t>(std::min(kChunk, posted + kGuard - at), 0xA5), at);
  }
  return b;
}

// Each rank sends `bytes` to its right neighbour into a receive of `posted` bytes on the left, and
// checks the data and received_bytes.
void ring(Transport& t, uint64_t bytes, uint64_t posted, Memory send_mem, Memory recv_mem,
          uint64_t tag) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  Buffer out(bytes, send_mem);
  fill(out, bytes, rank * 1000003ull + bytes);
  auto in = receive_buffer(posted, recv_mem);
  std::vector<std::unique_ptr<Transfer>> ts(2);
  CHECK_OK(t.irecv(in->data(), posted, recv_mem, left, tag, &ts[0]));
  CHECK_OK(t.isend(out.data(), bytes, send_mem, right, tag, &ts[1]));
  wait_all(t, ts);
  CHECK(ts[0]->received_bytes() == bytes, "received_bytes %llu, expected %llu",
        static_cast<unsigned long long>(ts[0]->received_bytes()),
        static_cast<unsigned long long>(bytes));
  check_message(*in, posted, bytes, left * 1000003ull + bytes, "ring");
}

// 100 transfers each way between neighbours, all posted before any is tested; receives posted in
// reverse tag order, so that only the tags can pair them with their sends. A second thread drives
// the transport meanwhile, as MPIZip's progress thread does.
void concurrent(Transport& t, Memory mem) {
  std::atomic<bool> stop{false};
  std::thread progress([&] {
    while (!stop.load()) {
      t.progress();
      std::this_thread::yield();
    }
  });
  constexpr int kCount = 100;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  auto bytes_of = [](int i) -> uint64_t { return i % 25 == 0 ? 4 * kMiB + i : 1 + i * 2741ull; };
  std::vector<std::unique_ptr<Buffer>> outs, ins;
  std::vector<std::unique_ptr<Transfer>> ts;
  // Tags 0..99 travel to the right, tags 100..199 to the left.
  for (int i = 2 * kCount - 1; i >= 0; --i) {
    int from = i < kCount ? left : right;
    ins.push_back(receive_buffer(bytes_of(i % kCount), mem));
    ts.emplace_back();
    CHECK_OK(t.irecv(ins.back()->data(), bytes_of(i % kCount), mem, from, i, &ts.back()));
  }
  for (int i = 0; i < 2 * kCount; ++i) {
    int to = i < kCount ? right : left;
    uint64_t bytes = bytes_of(i % kCount);
    outs.push_back(std::make_unique<Buffer>(bytes, mem));
    fill(*outs.back(), bytes, rank * 7919ull + i);
    ts.emplace_back();
    CHECK_OK(t.isend(outs.back()->data(), bytes, mem, to, i, &ts.back()));
  }
  wait_all(t, ts);
  stop.store(true);
  progress.join();
  for (int k = 0; k < 2 * kCount; ++k) {
    int i = 2 * kCount - 1 - k;
    int from = i < kCount ? left : right;
    uint64_t bytes = bytes_of(i % kCount);
    CHECK(ts[k]->received_bytes() == bytes, "concurrent tag %d: received_bytes", i);
    check_message(*ins[k], bytes, bytes, from * 7919ull + i, "concurrent");
  }
}

// Two communicators send with the same tag; the second communicator's receive is posted first and
// the first communicator's message is sent first: a shared tag space would swap them.
void two_communicators(Memory mem) {
  MPI_Comm a, b;
  MPI_Comm_dup(MPI_COMM_WORLD, &a);
  MPI_Comm_dup(MPI_COMM_WORLD, &b);
  std::unique_ptr<Transport> ta, tb;
  CHECK_OK(mpizip::transport::create_ucx(a, {}, &ta));
  CHECK_OK(mpizip::transport::create_ucx(b, {}, &tb));
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const uint64_t bytes_a = 1000, bytes_b = 5 * kMiB + 7;
  auto in_a = receive_buffer(bytes_b, mem), in_b = receive_buffer(bytes_b, mem);
  Buffer out_a(bytes_a, mem), out_b(bytes_b, mem);
  fill(out_a, bytes_a, rank * 31ull + 1);
  fill(out_b, bytes_b, rank * 31ull + 2);
  std::vector<std::unique_ptr<Transfer>> on_a(2), on_b(2);
  CHECK_OK(tb->irecv(in_b->data(), bytes_b, mem, left, 5, &on_b[0]));
  CHECK_OK(ta->isend(out_a.data(), bytes_a, mem, right, 5, &on_a[1]));
  CHECK_OK(ta->irecv(in_a->data(), bytes_b, mem, left, 5, &on_a[0]));
  CHECK_OK(tb->isend(out_b.data(), bytes_b, mem, right, 5, &on_b[1]));
  wait_all(*ta, on_a);
  wait_all(*tb, on_b);
  CHECK(on_a[0]->received_bytes() == bytes_a, "communicator a: received_bytes");
  CHECK(on_b[0]->received_bytes() == bytes_b, "communicator b: received_bytes");
  check_message(*in_a, bytes_b, bytes_a, left * 31ull + 1, "communicator a");
  check_message(*in_b, bytes_b, bytes_b, left * 31ull + 2, "communicator b");
  on_a.clear();
  on_b.clear();
  ta.reset();
  tb.reset();
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
}

// Sends `bytes` to the right neighbour into a receive of `posted` bytes on the left, with tag 77:
// the send ends with kOk, the receive with `expect`, holding the part of the message that fits.
void send_into(Transport& t, Memory mem, uint64_t bytes, uint64_t posted, uint64_t seed,
               Status expect) {
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  Buffer out(bytes, mem);
  fill(out, bytes, rank * 17ull + seed);
  auto in = receive_buffer(posted, mem);
  std::vector<std::unique_ptr<Transfer>> r(1), s(1);
  CHECK_OK(t.irecv(in->data(), posted, mem, left, 77, &r[0]));
  CHECK_OK(t.isend(out.data(), bytes, mem, right, 77, &s[0]));
  wait_all(t, s);
  wait_all(t, r, expect);
  uint64_t fits = std::min(bytes, posted);
  CHECK(r[0]->received_bytes() == fits, "%llu bytes into %llu: received_bytes %llu",
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(posted),
        static_cast<unsigned long long>(r[0]->received_bytes()));
  check_message(*in, posted, fits, left * 17ull + seed, "send_into");
}

// Receives smaller than the message end with kTruncated, holding what fits, and the sender
// completes; the pieces that did not fit are dropped, so that the next message with the same tag
// arrives intact. Cases: within one piece, into nothing, a partial piece too small, whole pieces
// beyond the receive.
void truncation(Transport& t, Memory mem) {
  const uint64_t cases[][2] = {{2000, 1000},
                               {100, 0},
                               {5 * kMiB, 4 * kMiB + 1000},
                               {13 * kMiB + 3, 5 * kMiB},
                               {8 * kMiB + 1, 4 * kMiB}};
  for (auto [bytes, posted] : cases) {
    send_into(t, mem, bytes, posted, 1, Status::kTruncated);
    send_into(t, mem, bytes, bytes, 2, Status::kOk);
  }
}

// A rank sends to itself.
void self(Transport& t, Memory mem) {
  const uint64_t bytes = 9 * kMiB + 1;
  Buffer out(bytes, mem);
  fill(out, bytes, rank * 5ull + 3);
  auto in = receive_buffer(bytes, mem);
  std::vector<std::unique_ptr<Transfer>> ts(2);
  CHECK_OK(t.isend(out.data(), bytes, mem, rank, 3, &ts[0]));
  CHECK_OK(t.irecv(in->data(), bytes, mem, rank, 3, &ts[1]));
  wait_all(t, ts);
  check_message(*in, bytes, bytes, rank * 5ull + 3, "self");
}

// Every rank runs on this machine: all peers share the node, unless force_internode.
void node_peers(Transport& t) {
  mpizip::transport::Options options;
  options.force_internode = true;
  std::unique_ptr<Transport> apart;
  CHECK_OK(mpizip::transport::create_ucx(MPI_COMM_WORLD, options, &apart));
  for (int p = 0; p < size; ++p) {
    CHECK(t.same_node(p), "rank %d not on this node", p);
    CHECK(apart->same_node(p) == (p == rank), "force_internode: same_node(%d)", p);
  }
  CHECK(!t.same_node(size) && !t.same_node(-1), "same_node out of range");
  std::unique_ptr<Transfer> x;
  char c = 0;
  CHECK(t.isend(&c, 1, Memory::kHost, size, 0, &x) == Status::kInvalidArgument, "bad peer");
}

// Waits for an MPI barrier while driving the transport, as MPIZip's progress thread does: UCX
// connection set-up and teardown need both sides to make progress.
void barrier(Transport* t) {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0; !done;) {
    if (t != nullptr) t->progress();
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
}

// The last rank's UCX goes away, as if the process had died: a receive from it that was posted
// before fails with kTransportError within seconds instead of hanging, and so does a send to it
// once the failure is known. Ends the use of UCX on the last rank.
void peer_failure(std::unique_ptr<Transport>& t) {
  int last = size - 1;
  if (rank == last) {
    barrier(t.get());
    t.reset();
    mpizip::transport::shutdown_ucx();
    barrier(nullptr);
    return;
  }
  char in[16], out[16] = {};
  std::unique_ptr<Transfer> r, s;
  CHECK_OK(t->irecv(in, sizeof in, Memory::kHost, last, 1, &r));
  barrier(t.get());
  barrier(t.get());
  double deadline = MPI_Wtime() + 30;
  Status st = Status::kOk;
  for (bool done = false; !done && st == Status::kOk;) {
    CHECK(MPI_Wtime() < deadline, "peer failure not reported within 30 s");
    st = r->test(&done);
  }
  CHECK(st == Status::kTransportError, "receive from a failed peer: '%s'", status_string(st));
  CHECK_OK(t->isend(out, sizeof out, Memory::kHost, last, 2, &s));
  bool done = false;
  st = s->test(&done);
  CHECK(st == Status::kTransportError, "send to a failed peer: '%s'", status_string(st));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool big = false, peer_fails = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--big") == 0) big = true;
    if (std::strcmp(argv[i], "--no-peer-failure") == 0) peer_fails = false;
  }

  std::unique_ptr<Transport> t;
  CHECK_OK(mpizip::transport::create_ucx(MPI_COMM_WORLD, {}, &t));
  CHECK(std::strcmp(t->name(), "ucx") == 0, "name");

  std::vector<std::pair<Memory, Memory>> kinds = {{Memory::kHost, Memory::kHost}};
  if (mpizip::platform::has_gpu()) {
    kinds.insert(kinds.end(), {{Memory::kDevice, Memory::kHost},
                               {Memory::kHost, Memory::kDevice},
                               {Memory::kDevice, Memory::kDevice}});
  }
  const uint64_t sizes[] = {0, 1, 4095, kMiB + 3, 4 * kMiB - 1, 4 * kMiB, 8 * kMiB, 64 * kMiB};
  uint64_t tag = 0;
  for (auto [send_mem, recv_mem] : kinds) {
    for (uint64_t bytes : sizes) ring(*t, bytes, bytes, send_mem, recv_mem, tag++);
    // The sender sends less than the receive posted: a short piece, an exact number of pieces
    // (the receiver then cancels the receives it posted beyond them), nothing at all.
    ring(*t, 1000, kMiB, send_mem, recv_mem, tag++);
    ring(*t, 8 * kMiB, 12 * kMiB + 5, send_mem, recv_mem, tag++);
    ring(*t, 0, 5 * kMiB, send_mem, recv_mem, tag++);
  }
  for (auto [send_mem, recv_mem] : kinds) {
    if (send_mem != recv_mem) continue;
    concurrent(*t, send_mem);
    two_communicators(send_mem);
    self(*t, send_mem);
    truncation(*t, send_mem);
  }
  node_peers(*t);
  if (big) ring(*t, 2 * 1024 * kMiB + 5, 2 * 1024 * kMiB + 5, Memory::kHost, Memory::kHost, tag++);
  if (peer_fails) peer_failure(t);

  t.reset();
  mpizip::transport::shutdown_ucx();
  if (rank == 0) std::printf("ucx_test: %d ranks, %zu memory pairings: ok\n", size, kinds.size());
  MPI_Finalize();
  return 0;
}
