// What the transport tests under MPI share (tests/transport/transport_test.cc with host buffers,
// tests/gpu/transport_device.cc with device buffers): the failure check, the data, and posting and
// completing transfers with the bytes they must deliver.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/transport/transport.h"

namespace transport_test {

using mpizip::Status;
using mpizip::status_string;
using mpizip::transport::Memory;
using mpizip::transport::Transfer;
using mpizip::transport::Transport;

inline int rank = 0;  // in MPI_COMM_WORLD, set by main()
inline int size = 0;

#define CHECK(cond, ...)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "rank %d: %s:%d: ", ::transport_test::rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                                  \
      std::fprintf(stderr, "\n");                                                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
    }                                                                                     \
  } while (0)
#define CHECK_OK(expr)                                                                    \
  do {                                                                                    \
    ::mpizip::Status s_ = (expr);                                                         \
    CHECK(s_ == ::mpizip::Status::kOk, "%s: %s", #expr, ::mpizip::status_string(s_));     \
  } while (0)

// CLOCK_MONOTONIC, the clock of the emulated link.
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The bytes `src` sends to `dst` under `tag` (and `round`): position-dependent, so misplaced
// pieces show.
inline std::vector<uint8_t> pattern(int src, int dst, uint64_t tag, uint64_t bytes,
                                    uint64_t round = 0) {
  std::vector<uint8_t> v(bytes);
  uint64_t x = (static_cast<uint64_t>(src) << 48) ^ (static_cast<uint64_t>(dst) << 32) ^
               (tag * 0x9E3779B97F4A7C15ull) ^ (round * 0xD1B54A32D192ED03ull) ^
               0x5851F42D4C957F2Dull;
  for (uint64_t i = 0; i < bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(&v[i], &x, std::min<uint64_t>(8, bytes - i));
  }
  return v;
}

// One posted transfer and what it must end with.
struct Posted {
  std::unique_ptr<Transfer> transfer;
  std::vector<uint8_t> host;       // the buffer in host memory; for a device receive, its bytes
                                   // once fetched
  std::shared_ptr<void> device;    // the buffer in device memory (owned), if any
  std::vector<uint8_t> expected;   // receives: the bytes that must land
  uint64_t expected_bytes = 0;     // receives: received_bytes() at the end
  Status expected_status = Status::kOk;
  Status status = Status::kOk;
  bool done = false;
  int64_t done_ns = 0;
  std::string what;
  bool guarded = false;     // host receives: bytes [guard_from, host.size()) must stay kGuardByte
  uint64_t guard_from = 0;
};

// Host receives get this many bytes of kGuardByte past their capacity, which nothing may write
// (a truncated receive must not spill past the buffer).
constexpr uint64_t kGuardBytes = (uint64_t{8} << 20) + 64;
constexpr uint8_t kGuardByte = 0xEE;

// Copies the first `bytes` of a device receive's buffer into p->host.
using Fetch = std::function<void(Posted* p, uint64_t bytes)>;

// Tests every transfer until all are done (the transport's progress() in between; a job that takes
// a minute has hung and is aborted), then checks each one's status, size and bytes.
inline void complete(Transport* t, std::vector<Posted>* all, const Fetch& fetch = {}) {
  const int64_t deadline = now_ns() + int64_t{60} * 1000000000;
  for (size_t left = all->size(); left > 0;) {
    for (Posted& p : *all) {
      if (p.done) continue;
      p.status = p.transfer->test(&p.done);
      if (p.done) {
        p.done_ns = now_ns();
        --left;
      }
    }
    t->progress();
    std::this_thread::yield();  // tests run oversubscribed: let the peers run
    CHECK(now_ns() < deadline, "transfers hang (%zu left)", left);
  }
  for (Posted& p : *all) {
    CHECK(p.status == p.expected_status, "%s: %s, expected %s", p.what.c_str(),
          status_string(p.status), status_string(p.expected_status));
    CHECK(p.transfer->received_bytes() == p.expected_bytes, "%s: received %llu bytes",
          p.what.c_str(), static_cast<unsigned long long>(p.transfer->received_bytes()));
    if (p.guarded) {
      uint64_t spilled = 0;
      for (uint64_t i = p.guard_from; i < p.host.size(); ++i) spilled += p.host[i] != kGuardByte;
      CHECK(spilled == 0, "%s: %llu bytes written past the buffer", p.what.c_str(),
            static_cast<unsigned long long>(spilled));
    }
    if (p.expected.empty()) continue;
    if (p.device != nullptr) fetch(&p, p.expected.size());
    CHECK(std::memcmp(p.host.data(), p.expected.data(), p.expected.size()) == 0,
          "%s: wrong bytes", p.what.c_str());
  }
}

// A host send of pattern(rank, peer, tag, bytes).
inline Posted post_send(Transport* t, int peer, uint64_t tag, uint64_t bytes) {
  Posted p;
  p.host = pattern(rank, peer, tag, bytes);
  p.what = "send of " + std::to_string(bytes) + " bytes to " + std::to_string(peer) + " tag " +
           std::to_string(tag);
  CHECK_OK(t->isend(p.host.data(), bytes, Memory::kHost, peer, tag, &p.transfer));
  return p;
}

// What a receive of a `capacity`-byte buffer must end with when `peer` sends `sent` bytes.
inline void expect(Posted* p, int peer, uint64_t tag, uint64_t capacity, uint64_t sent,
                   uint64_t round = 0) {
  p->expected = pattern(peer, rank, tag, sent, round);
  p->expected.resize(std::min(sent, capacity));
  p->expected_bytes = p->expected.size();
  p->expected_status = sent > capacity ? Status::kTruncated : Status::kOk;
  p->what = "receive of " + std::to_string(sent) + " bytes into " + std::to_string(capacity) +
            " from " + std::to_string(peer) + " tag " + std::to_string(tag);
}

// A host receive of a `capacity`-byte buffer from `peer`, who sends `sent` bytes.
inline Posted post_recv(Transport* t, int peer, uint64_t tag, uint64_t capacity, uint64_t sent) {
  Posted p;
  p.host.assign(capacity + kGuardBytes, kGuardByte);
  p.guarded = true;
  p.guard_from = capacity;
  expect(&p, peer, tag, capacity, sent);
  CHECK_OK(t->irecv(p.host.data(), capacity, Memory::kHost, peer, tag, &p.transfer));
  return p;
}

}  // namespace transport_test
