// The GPU codec as the protocol uses it: asynchronous jobs on one process-wide codec stream, which
// the sender and receiver poll instead of synchronising with the device.
//   compress:   device buffer -> compressed stream in a device buffer; with `split`, the header
//               and raw section (stream[0, format::coded_offset)) are marked ready by an event of
//               their own, so that they can leave while the coded section is being encoded.
//   decompress: compressed stream in device memory -> the user's device buffer.
// The codec's workspace is shared by every job: jobs are ordered on the one stream, which is a
// blocking stream (it also waits for the application's work on the legacy default stream).
// Builds without the GPU codec answer kUnsupported, and the protocol then stages raw bytes and
// uses the CPU codec.
#pragma once

#include <cstdint>

#include "kernels/format.h"
#include "src/platform/buffers.h"
#include "src/platform/device.h"
#include "src/platform/status.h"

namespace mpizip::p2p {

class GpuJob {
 public:
  GpuJob() = default;
  ~GpuJob();
  GpuJob(const GpuJob&) = delete;
  GpuJob& operator=(const GpuJob&) = delete;

  // Compression: whether the raw part (split jobs) / the whole job has finished on the device.
  // kDeviceError when the device reported a failure.
  Status raw_ready(bool* ready);
  Status done(bool* finished);
  // After done(): the codec's status (kOk, kCorruptStream, kTypeMismatch, kTruncated), and the
  // stream's size in bytes (compression) or the elements written (decompression).
  Status result() const;
  uint64_t size() const;

  platform::DeviceBuffer& stream() { return stream_; }
  const platform::DeviceBuffer& stream() const { return stream_; }

 private:
  friend Status gpu_start_compress(format::DType, const void*, uint64_t, bool, bool, GpuJob*);
  friend Status gpu_start_decompress(format::DType, const void*, uint64_t, uint64_t, void*,
                                     uint64_t, GpuJob*);
  platform::DeviceBuffer stream_;  // compression: the stream; decompression: truncation scratch
  platform::Event raw_event_;
  platform::Event done_event_;
  bool split_ = false;
  int slot_ = -1;  // the job's result word in pinned memory
};

// Queues the compression of `count` elements at device pointer `src` into job->stream().
// kUnsupported without a GPU codec; kOutOfMemory when no device or pinned memory is left.
Status gpu_start_compress(format::DType t, const void* src, uint64_t count, bool checksum,
                          bool split, GpuJob* job);

// Queues the decoding of the stream at device pointer `stream` (`bytes` bytes), which the match
// header announced as `count` elements, into device pointer `dst`, which holds `capacity` bytes.
// When the data does not fit, the first `capacity` bytes are written. After done(): size() must
// equal `count` (anything else is a corrupt stream).
Status gpu_start_decompress(format::DType t, const void* stream, uint64_t bytes, uint64_t count,
                            void* dst, uint64_t capacity, GpuJob* job);

// The offset of the coded section for `count` elements when the stream is split (the bytes the
// raw-ready event covers); 0 when a stream of this size is not split (a tiny one is stored whole).
uint64_t gpu_split_bytes(format::DType t, uint64_t count);

}  // namespace mpizip::p2p
