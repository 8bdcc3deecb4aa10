// Chunked payloads (Payload::kChunked, p2p/wire.h): a host buffer compressed on the CPU and sent
// in chunks of a fixed number of application bytes (the header's payload_bytes), each chunk a
// stream of its own (docs/FORMAT.md, STORED where coding does not shrink it) in a transfer of its
// own, under tags bulk_tag, bulk_tag + 1, ... A whole-message stream compresses everything before
// its first byte leaves and is decoded only after its last byte lands; in chunks, the sender's
// codec, the wire and the receiver's decoder work on different chunks at the same time. The
// sender compresses every chunk when the send starts, posting each as soon as it is compressed (a
// send must not wait for the receiver to take earlier chunks: docs/PROTOCOL.md, progress), so it
// holds the whole compressed message, as an unchunked send does; the receiver has at most
// kChunkWindow chunks in flight, kChunkWindow x the largest compressed chunk of memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "p2p/channel.h"
#include "p2p/gpu_codec.h"
#include "p2p/wire.h"
#include "src/platform/buffers.h"
#include "src/platform/status.h"
#include "src/transport/transport.h"

namespace mpizip::p2p {

inline constexpr int kChunkWindow = 4;

// Chunks of a message of `app_bytes` in chunks of `chunk_bytes` (both multiples of the element).
inline uint64_t chunk_count(uint64_t app_bytes, uint64_t chunk_bytes) {
  return chunk_bytes == 0 ? 0 : (app_bytes + chunk_bytes - 1) / chunk_bytes;
}

class ChunkedSender {
 public:
  // `first_tag`: the first of chunk_count() consecutive transfer tags reserved for the message.
  ChunkedSender(const Channel& ch, const UserBuffer& b, int dest, uint64_t first_tag,
                uint64_t chunk_bytes);
  // Compresses every chunk and posts each as soon as it is compressed.
  Status start();
  // Tests the chunks in flight. kOk with *done once every chunk has left; an error status when a
  // transfer failed.
  Status advance(bool* done);
  // Every chunk is compressed and posted: the application's buffer is no longer read.
  bool all_posted() const { return next_ == chunks_; }
  // The send failed: every chunk not yet posted leaves empty, which the receiver reports as a
  // corrupt payload (it never waits for a chunk that does not come).
  void abandon();
  uint64_t wire_bytes() const { return wire_bytes_; }
  double codec_seconds() const { return codec_seconds_; }

 private:
  struct Slot {
    platform::HostBuffer data;
    std::unique_ptr<transport::Transfer> transfer;
  };
  Status post_next(Slot* slot);

  Channel ch_;
  UserBuffer b_;
  int dest_;
  uint64_t first_tag_;
  uint64_t chunk_elems_;
  uint64_t chunks_;
  uint64_t next_ = 0;  // next chunk to compress
  std::vector<Slot> slots_;  // one per chunk
  uint64_t wire_bytes_ = 0;
  double codec_seconds_ = 0;
};

// The same from device memory (Payload::kChunkedDevice, MPIZIP_P2P_PIPELINE=chunked): every
// chunk's compression is queued on the GPU at once, each a job of its own, and each chunk leaves
// from device memory as soon as its job has ended.
class ChunkedDeviceSender {
 public:
  ChunkedDeviceSender(const Channel& ch, const UserBuffer& b, int dest, uint64_t first_tag,
                      uint64_t chunk_bytes);
  // Queues every chunk's compression. kUnsupported without a GPU codec (nothing queued then).
  Status start();
  // Posts the chunks whose compression ended, tests those in flight. kOk with *done once every
  // chunk has left.
  Status advance(bool* done);
  // As ChunkedSender::abandon(): the chunks not yet posted leave empty.
  void abandon();
  // Every chunk is compressed and posted: the application's buffer is no longer read.
  bool all_posted() const { return posted_ == chunks_; }
  uint64_t wire_bytes() const { return wire_bytes_; }

 private:
  Channel ch_;
  UserBuffer b_;
  int dest_;
  uint64_t first_tag_;
  uint64_t chunk_elems_;
  uint64_t chunks_;
  uint64_t posted_ = 0;  // chunks are posted in order, as their jobs end in order
  std::vector<std::unique_ptr<GpuJob>> jobs_;
  std::vector<std::unique_ptr<transport::Transfer>> transfers_;
  uint64_t wire_bytes_ = 0;
};

class ChunkedReceiver {
 public:
  // `h`: a validated kChunked header. `discard`: receive every chunk and decode none (the
  // receive failed already, e.g. on a type mismatch, but the sender must complete).
  ChunkedReceiver(const Channel& ch, const UserBuffer& b, const MatchHeader& h, int source,
                  bool discard);
  // Posts receives for the next chunks and decodes those that landed. kOk with *done once every
  // chunk has landed (and, unless discarding, been decoded into the application's buffer; only its
  // first `capacity` bytes when the message is larger). kCorruptStream, with *done, when a chunk
  // did not decode (reported once every chunk has been drained); a transport error at once.
  Status advance(bool* done);
  uint64_t wire_bytes() const { return wire_bytes_; }
  double codec_seconds() const { return codec_seconds_; }

 private:
  struct Slot {
    uint64_t chunk = 0;
    platform::HostBuffer data;      // kChunked
    platform::DeviceBuffer device;  // kChunkedDevice
    std::unique_ptr<transport::Transfer> transfer;
    std::unique_ptr<GpuJob> decode;  // kChunkedDevice into a device buffer: decoding on the GPU
    uint64_t keep = 0;               // bytes of the chunk the application's buffer takes
    bool in_host = true;             // the chunk lands in `data` (host memory)
  };
  Status post_next(Slot* slot);
  Status deliver(Slot* slot);
  Status decode_host(Slot* slot, const uint8_t* stream, uint64_t stream_bytes);
  void check_decoded(Slot* slot);

  Channel ch_;
  UserBuffer b_;
  MatchHeader h_;
  int source_;
  bool discard_;
  bool device_;  // kChunkedDevice: chunks land in device memory
  uint64_t chunk_elems_;
  uint64_t chunks_;
  uint64_t capacity_;  // bytes of the application's buffer
  uint64_t next_ = 0;  // next chunk to post
  uint64_t landed_ = 0;
  Slot slots_[kChunkWindow];
  platform::HostBuffer scratch_;  // a chunk that cannot be decoded in place
  Status failure_ = Status::kOk;
  uint64_t wire_bytes_ = 0;
  double codec_seconds_ = 0;
};

}  // namespace mpizip::p2p
