// A transport for the fuzz targets: every receive is served at once from bytes of the fuzz input,
// as a peer would have sent them. Each receive takes a 2-byte little-endian length L from the
// feed, then min(L, posted size, what is left) bytes; L = 0xFFFF makes the transfer fail, as a
// vanished peer's would. Sends are not needed by the receivers under test and fail.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "src/transport/transport.h"

namespace mpizip::fuzz {

class FeedTransport : public transport::Transport {
 public:
  FeedTransport(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  const char* name() const override { return "fuzz-feed"; }
  bool reaches_device_memory() const override { return false; }
  bool same_node(int) const override { return false; }
  Status isend(const void*, uint64_t, transport::Memory, int, uint64_t,
               std::unique_ptr<transport::Transfer>*) override {
    return Status::kUnsupported;
  }
  Status irecv(void* buf, uint64_t bytes, transport::Memory where, int, uint64_t,
               std::unique_ptr<transport::Transfer>* out) override {
    // Without a GPU, nothing may hand a transport device memory.
    if (where != transport::Memory::kHost) std::abort();
    uint64_t want = 0;
    bool fail = false;
    if (end_ - p_ >= 2) {
      want = p_[0] | (uint64_t{p_[1]} << 8);
      p_ += 2;
      fail = want == 0xFFFF;
    }
    uint64_t n = fail ? 0 : want;
    if (n > bytes) n = bytes;
    if (n > static_cast<uint64_t>(end_ - p_)) n = static_cast<uint64_t>(end_ - p_);
    if (n > 0) std::memcpy(buf, p_, n);  // ASan checks that the receiver posted `bytes` of memory
    p_ += n;
    ++posted_;
    *out = std::make_unique<Feed>(n, fail);
    return Status::kOk;
  }
  uint64_t posted() const { return posted_; }

 private:
  class Feed : public transport::Transfer {
   public:
    Feed(uint64_t n, bool fail) : n_(n), fail_(fail) {}
    Status test(bool* done) override {
      *done = !fail_;
      return fail_ ? Status::kTransportError : Status::kOk;
    }
    uint64_t received_bytes() const override { return n_; }

   private:
    uint64_t n_;
    bool fail_;
  };
  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t posted_ = 0;
};

}  // namespace mpizip::fuzz
