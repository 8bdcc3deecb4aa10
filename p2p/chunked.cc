#include "p2p/chunked.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kernels/codec_cpu.h"
#include "src/platform/device.h"
#include "src/platform/log.h"

namespace mpizip::p2p {
namespace {

using transport::Memory;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Elements of chunk `k`.
uint64_t elems_of(uint64_t k, uint64_t chunk_elems, uint64_t count) {
  const uint64_t first = k * chunk_elems;
  return first >= count ? 0 : std::min(chunk_elems, count - first);
}

}  // namespace

ChunkedSender::ChunkedSender(const Channel& ch, const UserBuffer& b, int dest, uint64_t first_tag,
                             uint64_t chunk_bytes)
    : ch_(ch), b_(b), dest_(dest), first_tag_(first_tag) {
  chunk_elems_ = chunk_bytes / format::elem_bytes(b.dtype);
  chunks_ = chunk_count(static_cast<uint64_t>(b.count), chunk_elems_);
}

Status ChunkedSender::post_next(Slot* slot) {
  const uint64_t k = next_;
  const uint64_t n = elems_of(k, chunk_elems_, static_cast<uint64_t>(b_.count));
  const uint64_t elem = format::elem_bytes(b_.dtype);
  MPIZIP_CHECK(slot->data.resize(kernels::cpu::max_compressed_size(b_.dtype, n)));
  auto t0 = std::chrono::steady_clock::now();
  kernels::cpu::EncodeOptions opt;
  opt.checksum = ch_.policy.checksum;
  uint64_t written = 0;
  MPIZIP_CHECK(kernels::cpu::compress(b_.dtype, static_cast<const uint8_t*>(b_.ptr) + k * chunk_elems_ * elem,
                                      n, slot->data.data(), slot->data.size(), &written, opt));
  codec_seconds_ += seconds_since(t0);
  wire_bytes_ += written;
  ++next_;
  return ch_.transport->isend(slot->data.data(), written, Memory::kHost, dest_, first_tag_ + k,
                              &slot->transfer);
}

Status ChunkedSender::start() {
  slots_.resize(chunks_);
  while (next_ < chunks_) {
    Slot& s = slots_[next_];
    MPIZIP_CHECK(post_next(&s));
    // Earlier chunks move on while this thread compresses the next: one test drives the
    // transport (and MPI, for the MPI-library transport) once per chunk.
    if (next_ >= 2 && slots_[next_ - 2].transfer) {
      bool finished = false;
      MPIZIP_CHECK(slots_[next_ - 2].transfer->test(&finished));
    }
  }
  return Status::kOk;
}

Status ChunkedSender::advance(bool* done) {
  bool all_left = next_ == chunks_;
  for (Slot& s : slots_) {
    if (!s.transfer) continue;
    bool finished = false;
    MPIZIP_CHECK(s.transfer->test(&finished));
    if (finished) {
      s.transfer.reset();
      s.data.clear();  // back to the pool as soon as the chunk has left
    } else {
      all_left = false;
    }
  }
  *done = all_left;
  return Status::kOk;
}

ChunkedReceiver::ChunkedReceiver(const Channel& ch, const UserBuffer& b, const MatchHeader& h,
                                 int source, bool discard)
    : ch_(ch), b_(b), h_(h), source_(source), discard_(discard) {
  chunk_elems_ = h.payload_bytes / format::elem_bytes(h.dtype);
  chunks_ = chunk_count(h.count, chunk_elems_);
  capacity_ = static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
}

Status ChunkedReceiver::post_next(Slot* slot) {
  slot->chunk = next_++;
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  MPIZIP_CHECK(slot->data.resize(kernels::cpu::max_compressed_size(h_.dtype, n)));
  return ch_.transport->irecv(slot->data.data(), slot->data.size(), Memory::kHost, source_,
                              uint64_t{h_.bulk_tag} + slot->chunk, &slot->transfer);
}

// Decodes a chunk that landed into its place in the application's buffer: straight there when the
// buffer is host memory that holds the whole chunk, else through scratch (a device buffer, or the
// chunk that crosses the end of a too-small buffer); chunks wholly past the end are dropped.
Status ChunkedReceiver::deliver(Slot* slot) {
  const uint64_t stream_bytes = slot->transfer->received_bytes();
  wire_bytes_ += stream_bytes;
  slot->transfer.reset();
  if (discard_ || failure_ != Status::kOk) return Status::kOk;
  const uint64_t elem = format::elem_bytes(h_.dtype);
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  const uint64_t offset = slot->chunk * chunk_elems_ * elem;
  const uint64_t raw = n * elem;
  if (offset >= capacity_) return Status::kOk;
  const uint64_t keep = std::min(raw, capacity_ - offset);
  uint8_t* dst = static_cast<uint8_t*>(b_.ptr) + offset;
  const bool direct = !b_.device && keep == raw;
  if (!direct) {
    MPIZIP_CHECK(scratch_.resize(raw));
    dst = scratch_.data();
  }
  auto t0 = std::chrono::steady_clock::now();
  uint64_t decoded = 0;
  Status s = kernels::cpu::decompress(slot->data.data(), stream_bytes, dst, raw, &decoded);
  codec_seconds_ += seconds_since(t0);
  if (s != Status::kOk || decoded != n) {
    MPIZIP_ERROR("chunk %llu of a message from rank %d did not decode: %s",
                 static_cast<unsigned long long>(slot->chunk), source_,
                 status_string(s == Status::kOk ? Status::kCorruptStream : s));
    failure_ = Status::kCorruptStream;
    return Status::kOk;  // the other chunks are still drained
  }
  if (direct) return Status::kOk;
  uint8_t* user = static_cast<uint8_t*>(b_.ptr) + offset;
  if (b_.device) return platform::copy_to_device(user, scratch_.data(), keep);
  std::memcpy(user, scratch_.data(), keep);
  return Status::kOk;
}

Status ChunkedReceiver::advance(bool* done) {
  for (Slot& s : slots_) {
    if (s.transfer) {
      bool finished = false;
      MPIZIP_CHECK(s.transfer->test(&finished));
      if (!finished) continue;
      MPIZIP_CHECK(deliver(&s));
      ++landed_;
    }
    if (next_ < chunks_) MPIZIP_CHECK(post_next(&s));
  }
  *done = landed_ == chunks_;
  if (*done) {
    for (Slot& s : slots_) s.data.clear();
    scratch_.clear();
    return failure_;
  }
  return Status::kOk;
}

}  // namespace mpizip::p2p
