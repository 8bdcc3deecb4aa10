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

// An empty transfer where a chunk was promised: the receiver's decoder rejects it.
Status post_empty(const Channel& ch, int dest, uint64_t tag,
                  std::unique_ptr<transport::Transfer>* out) {
  static const uint8_t kNothing = 0;
  return ch.transport->isend(&kNothing, 0, Memory::kHost, dest, tag, out);
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

void ChunkedSender::abandon() {
  slots_.resize(chunks_);
  for (; next_ < chunks_; ++next_) {
    if (!ok(post_empty(ch_, dest_, first_tag_ + next_, &slots_[next_].transfer))) break;
  }
  next_ = chunks_;
}

ChunkedDeviceSender::ChunkedDeviceSender(const Channel& ch, const UserBuffer& b, int dest,
                                         uint64_t first_tag, uint64_t chunk_bytes)
    : ch_(ch), b_(b), dest_(dest), first_tag_(first_tag) {
  chunk_elems_ = chunk_bytes / format::elem_bytes(b.dtype);
  chunks_ = chunk_count(static_cast<uint64_t>(b.count), chunk_elems_);
}

Status ChunkedDeviceSender::start() {
  const uint64_t elem = format::elem_bytes(b_.dtype);
  jobs_.resize(chunks_);
  transfers_.resize(chunks_);
  for (uint64_t k = 0; k < chunks_; ++k) {
    jobs_[k] = std::make_unique<GpuJob>();
    const uint64_t n = elems_of(k, chunk_elems_, static_cast<uint64_t>(b_.count));
    MPIZIP_CHECK(gpu_start_compress(b_.dtype,
                                    static_cast<const uint8_t*>(b_.ptr) + k * chunk_elems_ * elem, n,
                                    ch_.policy.checksum, false, jobs_[k].get()));
  }
  return Status::kOk;
}

Status ChunkedDeviceSender::advance(bool* done) {
  // The jobs end in the order they were queued (one codec stream): post the finished prefix.
  while (posted_ < chunks_) {
    GpuJob& job = *jobs_[posted_];
    bool finished = false;
    MPIZIP_CHECK(job.done(&finished));
    if (!finished) break;
    MPIZIP_CHECK(job.result());
    wire_bytes_ += job.size();
    MPIZIP_CHECK(ch_.transport->isend(job.stream().data(), job.size(), Memory::kDevice, dest_,
                                      first_tag_ + posted_, &transfers_[posted_]));
    ++posted_;
  }
  bool all_left = posted_ == chunks_;
  for (uint64_t k = 0; k < posted_; ++k) {
    if (!transfers_[k]) continue;
    bool finished = false;
    MPIZIP_CHECK(transfers_[k]->test(&finished));
    if (finished) {
      transfers_[k].reset();
      jobs_[k].reset();  // the chunk's stream goes back to the device pool
    } else {
      all_left = false;
    }
  }
  *done = all_left;
  return Status::kOk;
}

void ChunkedDeviceSender::abandon() {
  transfers_.resize(chunks_);
  for (; posted_ < chunks_; ++posted_) {
    if (!ok(post_empty(ch_, dest_, first_tag_ + posted_, &transfers_[posted_]))) break;
  }
  posted_ = chunks_;
}

ChunkedReceiver::ChunkedReceiver(const Channel& ch, const UserBuffer& b, const MatchHeader& h,
                                 int source, bool discard)
    : ch_(ch), b_(b), h_(h), source_(source), discard_(discard),
      device_(h.payload == Payload::kChunkedDevice) {
  chunk_elems_ = h.payload_bytes / format::elem_bytes(h.dtype);
  chunks_ = chunk_count(h.count, chunk_elems_);
  capacity_ = static_cast<uint64_t>(b.count) * format::elem_bytes(b.dtype);
}

Status ChunkedReceiver::post_next(Slot* slot) {
  slot->chunk = next_++;
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  const uint64_t cap = kernels::cpu::max_compressed_size(h_.dtype, n);
  const uint64_t tag = uint64_t{h_.bulk_tag} + slot->chunk;
  slot->in_host = !device_;
  if (device_) {
    if (slot->device.resize(cap) == Status::kOk) {
      return ch_.transport->irecv(slot->device.data(), cap, Memory::kDevice, source_, tag,
                                  &slot->transfer);
    }
    // No device memory (or no GPU here): into host memory (the transports carry device-to-host
    // transfers too), decoded on the CPU.
    MPIZIP_LOG_ONCE(kWarn, "no device memory for a chunk of %llu bytes; receiving through host "
                    "memory", static_cast<unsigned long long>(cap));
    slot->in_host = true;
  }
  MPIZIP_CHECK(slot->data.resize(cap));
  return ch_.transport->irecv(slot->data.data(), cap, Memory::kHost, source_, tag, &slot->transfer);
}

// Decodes a chunk that landed into its place in the application's buffer: on the GPU straight
// into a device buffer (the first `keep` bytes, for the chunk that crosses the end of a too-small
// buffer); on the CPU into a host buffer, straight there when it holds the whole chunk, else
// through scratch (device chunks for a host buffer are copied to the host first). Chunks wholly
// past the end are dropped.
Status ChunkedReceiver::deliver(Slot* slot) {
  const uint64_t stream_bytes = slot->transfer->received_bytes();
  wire_bytes_ += stream_bytes;
  slot->transfer.reset();
  if (discard_ || failure_ != Status::kOk) return Status::kOk;
  const uint64_t elem = format::elem_bytes(h_.dtype);
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  const uint64_t offset = slot->chunk * chunk_elems_ * elem;
  if (offset >= capacity_) return Status::kOk;
  slot->keep = std::min(n * elem, capacity_ - offset);
  if (!slot->in_host && b_.device) {
    slot->decode = std::make_unique<GpuJob>();
    Status s = gpu_start_decompress(h_.dtype, slot->device.data(), stream_bytes, n,
                                    static_cast<uint8_t*>(b_.ptr) + offset, slot->keep,
                                    slot->decode.get());
    if (s == Status::kOk) return Status::kOk;
    slot->decode.reset();
    MPIZIP_LOG_ONCE(kWarn, "GPU decompression unavailable (%s); decoding on the CPU",
                    status_string(s));
  }
  if (!slot->in_host) {
    MPIZIP_CHECK(slot->data.resize(stream_bytes));
    MPIZIP_CHECK(platform::copy_to_host(slot->data.data(), slot->device.data(), stream_bytes));
  }
  return decode_host(slot, slot->data.data(), stream_bytes);
}

Status ChunkedReceiver::decode_host(Slot* slot, const uint8_t* stream, uint64_t stream_bytes) {
  const uint64_t elem = format::elem_bytes(h_.dtype);
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  const uint64_t offset = slot->chunk * chunk_elems_ * elem;
  const uint64_t raw = n * elem;
  uint8_t* dst = static_cast<uint8_t*>(b_.ptr) + offset;
  const bool direct = !b_.device && slot->keep == raw;
  if (!direct) {
    MPIZIP_CHECK(scratch_.resize(raw));
    dst = scratch_.data();
  }
  auto t0 = std::chrono::steady_clock::now();
  uint64_t decoded = 0;
  // A stream of another element type may hold as many elements in fewer bytes.
  kernels::cpu::StreamInfo info;
  Status s = kernels::cpu::read_header(stream, stream_bytes, &info);
  if (s == Status::kOk && info.dtype != h_.dtype) s = Status::kTypeMismatch;
  if (s == Status::kOk) s = kernels::cpu::decompress(stream, stream_bytes, dst, raw, &decoded);
  codec_seconds_ += seconds_since(t0);
  if (s != Status::kOk || decoded != n) {
    MPIZIP_INFO("chunk %llu of a message from rank %d did not decode: %s",
                static_cast<unsigned long long>(slot->chunk), source_,
                status_string(s == Status::kOk ? Status::kCorruptStream : s));
    failure_ = Status::kCorruptStream;
    return Status::kOk;  // the other chunks are still drained
  }
  if (direct) return Status::kOk;
  uint8_t* user = static_cast<uint8_t*>(b_.ptr) + offset;
  if (b_.device) return platform::copy_to_device(user, scratch_.data(), slot->keep);
  std::memcpy(user, scratch_.data(), slot->keep);
  return Status::kOk;
}

// A GPU decode that ended: the stream must have held the chunk's elements.
void ChunkedReceiver::check_decoded(Slot* slot) {
  const uint64_t n = elems_of(slot->chunk, chunk_elems_, h_.count);
  Status s = slot->decode->result();
  if ((s == Status::kOk || s == Status::kTruncated) && slot->decode->size() == n) s = Status::kOk;
  if (s != Status::kOk && failure_ == Status::kOk) {
    MPIZIP_INFO("chunk %llu of a message from rank %d did not decode: %s",
                static_cast<unsigned long long>(slot->chunk), source_,
                status_string(s == Status::kTruncated ? Status::kCorruptStream : s));
    failure_ = Status::kCorruptStream;
  }
  slot->decode.reset();
}

Status ChunkedReceiver::advance(bool* done) {
  for (Slot& s : slots_) {
    if (s.transfer) {
      bool finished = false;
      MPIZIP_CHECK(s.transfer->test(&finished));
      if (!finished) continue;
      MPIZIP_CHECK(deliver(&s));
      if (!s.decode) ++landed_;
    }
    if (s.decode) {  // the slot's device memory is the decoder's until its job ends
      bool finished = false;
      MPIZIP_CHECK(s.decode->done(&finished));
      if (!finished) continue;
      check_decoded(&s);
      ++landed_;
    }
    if (next_ < chunks_) MPIZIP_CHECK(post_next(&s));
  }
  *done = landed_ == chunks_;
  if (*done) {
    for (Slot& s : slots_) {
      s.data.clear();
      s.device.clear();
    }
    scratch_.clear();
    return failure_;
  }
  return Status::kOk;
}

}  // namespace mpizip::p2p
